"""The staff console: the admin site, its dashboard, its app config and the admin bases every
family's admin builds on."""
