"""One Pulumi ComponentResource per module."""
