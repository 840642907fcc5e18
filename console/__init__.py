"""The staff console's parts that span families or belong to a family that does not
contribute them itself yet: the automations' share of a contact's timeline, cancelling a
run from the console, and runs by status in the metrics. The site, the dashboard and
the project filter are config's (config/console.py); each lower family contributes its
own timeline entries in its apps.py."""
