"""The `blueprint` command and its offline plan."""
