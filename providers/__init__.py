"""Dynamic providers: import-safe, no side effects at import time."""
