"""Helpers every package of this project uses, importing none of them."""
