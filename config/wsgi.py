"""The Django WSGI application, warmed up. Production serves it through config/rsgi.py
(granian --interface rsgi), which reads request bodies with a timeout first; a plain WSGI
server (gunicorn, granian --interface wsgi) needs a proxy in front that buffers bodies."""

import gc
import logging

from django.core.cache import cache
from django.core.validators import validate_email
from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver
from django.utils.module_loading import import_string

from config.workqueue import wake

django_application = get_wsgi_application()
# The API's busiest endpoints on the lean path (config/api/lean.py), everything else
# through Django's handler. Named by path: the lean path's modules import DRF's, which
# need the app registry that get_wsgi_application has just filled.
application = import_string("config.api.lean.LeanFront")(django_application)


def _warm_up() -> None:
    """Does at start what the first requests would otherwise pay for while clients wait.

    Django imports the URLconf (and with it every view, serializer and schema module),
    the cache client and the broker transport only when a request first needs them, and
    compiles the email validator's patterns on first use: a few hundred milliseconds of
    CPU that stalled the first requests of each server process. Then the objects of the
    loaded application are moved out of the garbage collector's view: they live as long
    as the process, and scanning them made each full collection stall every thread of the
    process for up to 200 ms.
    """
    get_resolver().url_patterns  # noqa: B018 (the import is the point)
    application.routes()
    validate_email("warm-up@example.com")
    try:
        cache.get("warm-up")
    except Exception:
        logging.getLogger(__name__).warning("The cache is unreachable", exc_info=True)
    wake.prepare()
    gc.collect()
    gc.freeze()


_warm_up()
