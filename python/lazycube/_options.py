"""Storage options as the compiled core takes them: a dict of strings."""

import json


def normalize_storage_options(options):
    """``{key: value}`` with every value a string: booleans as ``true``/``false``, a list or
    tuple (``allowed_prefixes=[...]``) as a JSON list (the core's list options take it, so an
    entry holding a comma stays one entry); None stays None."""
    if options is None:
        return None
    out = {}
    for key, value in options.items():
        if isinstance(value, str):
            out[str(key)] = value
        elif isinstance(value, bool):
            out[str(key)] = str(value).lower()
        elif isinstance(value, (list, tuple)):
            out[str(key)] = json.dumps([str(v) for v in value])
        else:
            out[str(key)] = str(value)
    return out
