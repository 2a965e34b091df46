"""Storage options as the compiled core takes them: a dict of strings."""


def normalize_storage_options(options):
    """``{key: value}`` with every value a string: booleans as ``true``/``false``, a list or
    tuple (``allowed_prefixes=[...]``) joined with commas; None stays None."""
    if options is None:
        return None
    out = {}
    for key, value in options.items():
        if isinstance(value, str):
            out[str(key)] = value
        elif isinstance(value, bool):
            out[str(key)] = str(value).lower()
        elif isinstance(value, (list, tuple)):
            out[str(key)] = ",".join(str(v) for v in value)
        else:
            out[str(key)] = str(value)
    return out
