"""The mutation check: breakages that the tests guarding a claim must catch
(breakages.py lists them, check.py applies each to a copy and runs its
guards; docs/claims.md maps the claims to them)."""
