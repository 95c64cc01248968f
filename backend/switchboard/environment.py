"""The process environment's defaults for the libraries Switchboard loads. Set once, by the entry
points (`switchboard.__main__.main`, and the app factory `web.app.create_app` for an app built in
code), never at the import of a package. A variable already set keeps its value."""

from __future__ import annotations

import os
from collections.abc import MutableMapping

__all__ = ["DEFAULTS", "set_defaults"]

DEFAULTS = {
    # litellm fetches its model cost map from the internet when it is imported, unless told to use
    # the copy it bundles: the model library never reaches the network at import.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    # fastmcp's OAuth token stores (py-key-value) have beartype check their own types at run time,
    # and instrumenting their modules on import costs a tenth of a second of every start. They are
    # the library's own checks, warnings only; set the variable to "false" to have them.
    "PY_KEY_VALUE_DISABLE_BEARTYPE": "true",
}


def set_defaults(environ: MutableMapping[str, str] | None = None) -> None:
    """Before the model library and fastmcp are imported (the app's modules import fastmcp)."""
    environ = os.environ if environ is None else environ
    for name, value in DEFAULTS.items():
        environ.setdefault(name, value)
