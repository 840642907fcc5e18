"""The lean ceiling (bench/ceiling.py) served by the API's own server: granian's RSGI
interface with the front that reads each body before a request takes a thread
(config/net/rsgiserver.py), exactly as config/rsgi.py serves the Django application
(`granian --interface rsgi bench.ceiling_front:application`, see `CeilingServer` in
bench/harness.py).

The front reads its settings (SERVER_THREADS, the body limits and timeout) from the API's
settings module, named in the server's environment as for the API's server; Django is not
set up and no app is loaded, so the work between the front and the database is the
ceiling's alone.
"""

from bench.ceiling import application as ceiling_application
from config.net.rsgiserver import Server

application = Server(ceiling_application)
