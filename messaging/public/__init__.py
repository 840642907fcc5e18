"""The public pages of the links in sent mail (no API key; signed tokens): the open
pixel, click redirects and the unsubscribe page. They are not part of the JSON API."""
