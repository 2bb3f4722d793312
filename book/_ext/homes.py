"""The ``{object-homes}`` directive: the table "object → the one module that defines it" of the API
page, generated from :data:`ntkbook.homes.HOMES` (so the page cannot drift from the code)."""

from __future__ import annotations

from docutils import nodes
from sphinx import addnodes
from sphinx.util.docutils import SphinxDirective


def _reference(name: str) -> nodes.Node:
    """A cross-reference to the documented object (a module or a function/class/constant)."""
    from ntkbook.homes import resolve

    is_module = type(resolve(name)).__name__ == "module"

    role = "mod" if is_module else "obj"
    ref = addnodes.pending_xref("", refdomain="py", reftype=role, reftarget=name, refexplicit=False)
    ref += nodes.literal(name, name, classes=["xref", "py", f"py-{role}"])
    return ref


class ObjectHomes(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        from ntkbook.homes import HOMES

        table = nodes.table(classes=["ntkbook-homes"])
        group = nodes.tgroup(cols=3)
        table += group
        for width in (30, 30, 40):
            group += nodes.colspec(colwidth=width)
        head = nodes.thead()
        group += head
        row = nodes.row()
        for title in ("object", "defined in", "note"):
            row += nodes.entry("", nodes.paragraph(text=title))
        head += row
        body = nodes.tbody()
        group += body
        for home in HOMES:
            row = nodes.row()
            row += nodes.entry("", nodes.paragraph(text=home.object))
            para = nodes.paragraph()
            para += _reference(home.name)
            row += nodes.entry("", para)
            row += nodes.entry("", nodes.paragraph(text=home.note))
            body += row
        return [table]


def setup(app):
    app.add_directive("object-homes", ObjectHomes)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
