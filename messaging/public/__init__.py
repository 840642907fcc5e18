"""The public pages of the links in sent mail (no API key; signed tokens): the open
pixel, click redirects, the unsubscribe page and the preference page. They are not part
of the JSON API."""
