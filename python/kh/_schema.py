"""kh._schema: the argument list of an op schema, "name(Tensor(a!) out, Tensor x, float eps=1e-6) -> ()".

One reading of it, Arg (name, type, written, default), for the call path (kh._tensors: names and
which arguments the op writes) and the functional forms (kh._outputs), so the two cannot split or
name a schema's arguments differently.
"""

NO_DEFAULT = object()  # Arg.default of an argument the schema gives no default


def argument_texts(schema):
    """The schema's arguments as written ("Tensor(a!) out", "float eps=1e-6"), stripped, in order:
    the text between the outer parentheses split at commas outside nested () and []."""
    inner = schema[schema.index("(") + 1:schema.rindex(")", 0, schema.index("->"))]
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(inner + ","):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            part = inner[start:i].strip()
            start = i + 1
            if part:
                parts.append(part)
    return parts


class Arg:
    """One schema argument: name, is_tensor, optional (a '?' type), written ('!'), default."""

    def __init__(self, text):
        declaration, eq, default = text.partition("=")
        type_text, _, self.name = declaration.strip().rpartition(" ")
        self.type_text = type_text.strip()
        self.is_tensor = self.type_text.startswith("Tensor")
        self.optional = self.type_text.endswith("?")
        self.written = "!" in self.type_text
        self.default = _parse_default(default.strip()) if eq else NO_DEFAULT

    def __repr__(self):
        return f"Arg({self.type_text} {self.name})"


def _parse_default(text):
    if text in ("None",):
        return None
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text.strip("'\"")


def schema_args(schema):
    """[Arg] of "name(Tensor(a!) out, Tensor x, float eps=1e-6) -> ()"."""
    return [Arg(text) for text in argument_texts(schema)]
