"""The cluster runtime: roles, servers, the start protocol, the watchdog."""
