"""kh._schema: the argument list of an op schema, "name(Tensor(a!) out, Tensor x, float eps=1e-6) -> ()".

One reading of it for the call path (kh._tensors: which arguments the op writes) and the functional
forms (kh._outputs: names, types, defaults), so the two cannot split a schema differently.
"""


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
