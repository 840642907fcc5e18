"""The production entry point: `granian --interface rsgi config.rsgi:application`. The
Django application (config/wsgi.py) behind the front that reads request bodies first
(config/net/rsgiserver.py says why)."""

from config.net.rsgiserver import Server
from config.wsgi import application as wsgi_application

application = Server(wsgi_application)
