"""Scenario: a scenario that can be copied and changed field by field.

A Scenario remembers where it came from (the built-in Atlas scenario, a file, YAML text
or a dict). Unchanged, it is simulated from exactly that source, so its report is the
CLI's byte for byte (`fleetplan simulate [FILE]`). Changed, it is simulated from the YAML
of its values (Scenario.yaml), named "SOURCE (edited)"; relative paths in it still resolve
against the original file's folder.

Every change is read again by the scenario readers before it is kept, so a bad value is
an InputError at once, located at its field (line and column are in Scenario.yaml), and
the Scenario keeps its previous values; update({path: value, ...}) changes several fields
that are only valid together at once. Fields are named by dotted paths with [i] for
list elements, as in the readers' errors: "deployment.replicas",
"workload.classes.interactive.prompt[0].tokens". How values map to YAML (a str is always a
string: "8" is not 8) is described in python/src/tree.h.
"""

import copy as _copy
import os
import re

from . import _core

_SEGMENT = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")


def _split(path):
    """'a.b[1].c' -> ['a', 'b', 1, 'c']; a TypeError or KeyError for a malformed path."""
    if not isinstance(path, str):
        raise TypeError("a field path is a str such as 'deployment.replicas', got %r" % (path,))
    keys = []
    for part in path.split("."):
        m = _SEGMENT.fullmatch(part)
        if m is None:
            raise KeyError("malformed field path %r (expected names joined by '.', with [i] for list elements)" % path)
        keys.append(m.group(1))
        keys.extend(int(i) for i in re.findall(r"\[(\d+)\]", m.group(2)))
    return keys


def _describe(keys):
    out = ""
    for k in keys:
        out += "[%d]" % k if isinstance(k, int) else ("." + k if out else k)
    return out


def _walk(tree, keys, path, create):
    node = tree
    for depth, k in enumerate(keys):
        here = _describe(keys[: depth + 1])
        if isinstance(k, int):
            if not isinstance(node, list) or k >= len(node):
                raise KeyError("%s: no such element in %r" % (here, path))
            node = node[k]
            continue
        if not isinstance(node, dict):
            raise KeyError("%s: %s is not a mapping" % (path, _describe(keys[:depth]) or "the scenario"))
        if k not in node:
            if not create:
                raise KeyError("%s: not set in this scenario (the reader's default applies)" % here)
            node[k] = {}
        node = node[k]
    return node


class Scenario:
    """A scenario: Scenario.atlas(), Scenario.load(path), Scenario.from_yaml(text),
    Scenario.from_dict(d), or Scenario(x) for any of a path, YAML text, a dict or a Scenario."""

    def __init__(self, source):
        if isinstance(source, Scenario):
            self._init(source._kind, source._value, source._name, source._dir, _copy.deepcopy(source._tree))
        elif isinstance(source, dict):
            self._init_tree(_copy.deepcopy(source), "<dict>", "")
        elif isinstance(source, os.PathLike):
            self._init("path", os.fspath(source), os.fspath(source), "", None)
        elif isinstance(source, str):
            if "\n" in source:
                self._init("text", source, "<string>", "", None)
            else:
                self._init("path", source, source, "", None)
        else:
            raise TypeError("a scenario is a path, YAML text, a dict or a Scenario, got %s" % type(source).__name__)

    @classmethod
    def atlas(cls):
        """The built-in Atlas scenario (`fleetplan simulate --print-scenario`)."""
        s = cls.__new__(cls)
        s._init("atlas", "", "<built-in atlas>", "", None)
        return s

    @classmethod
    def load(cls, path):
        """A scenario file (`fleetplan simulate PATH`)."""
        s = cls.__new__(cls)
        p = os.fspath(path)
        s._init("path", p, p, "", None)
        return s

    @classmethod
    def from_yaml(cls, text, name="<string>", dir=""):
        """YAML text; errors are located in `name`, relative paths resolve against `dir`."""
        s = cls.__new__(cls)
        s._init("text", text, name, dir, None)
        return s

    @classmethod
    def from_dict(cls, values, name="<dict>", dir=""):
        s = cls.__new__(cls)
        s._init_tree(_copy.deepcopy(values), name, dir)
        return s

    def _init(self, kind, value, name, dir, tree):
        info = _core.check_scenario(kind, value, name, dir)
        self._kind, self._value, self._name, self._dir, self._tree, self._info = kind, value, name, dir, tree, info

    def _init_tree(self, tree, name, dir):
        self._init("text", _core.tree_to_yaml(tree), name, dir, tree)

    # What the native part simulates: (kind, value, display name, folder).
    def _source(self):
        return self._kind, self._value, self._name, self._dir

    @property
    def name(self):
        return self._info["name"]

    @property
    def source(self):
        """The name errors and report.json's scenario.source use."""
        return self._info["source"]

    @property
    def digest(self):
        """sha256 of the YAML text simulated (report.json scenario.digest)."""
        return self._info["digest"]

    @property
    def seed(self):
        return self._info["seed"]

    @property
    def derived(self):
        """What the reader filled in or derived, one sentence each."""
        return list(self._info["derived"])

    @property
    def yaml(self):
        """The YAML text this scenario is simulated from."""
        if self._kind == "atlas":
            return _core.atlas_yaml()
        if self._kind == "path":
            with open(self._value, encoding="utf-8") as f:
                return f.read()
        return self._value

    def _values(self):
        if self._tree is None:
            self._tree = _core.yaml_to_tree(self.yaml)
        return self._tree

    def to_dict(self):
        """The scenario's values as plain Python values (a deep copy)."""
        return _copy.deepcopy(self._values())

    def copy(self):
        return Scenario(self)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __getitem__(self, path):
        keys = _split(path)
        return _copy.deepcopy(_walk(self._values(), keys, path, create=False))

    def get(self, path, default=None):
        try:
            return self[path]
        except KeyError:
            return default

    def __contains__(self, path):
        try:
            self[path]
            return True
        except KeyError:
            return False

    def __setitem__(self, path, value):
        self.update({path: value})

    def __delitem__(self, path):
        """Removes a field, so the reader's default applies."""
        self._change([(path, None, True)])

    def update(self, changes):
        """Sets several fields at once, read again once: for values that are only valid
        together (more replicas need more hardware.nodes). `changes`: {path: value}."""
        self._change([(path, value, False) for path, value in dict(changes).items()])

    def _change(self, changes):
        tree = _copy.deepcopy(self._values())
        for path, value, delete in changes:
            keys = _split(path)
            parent = _walk(tree, keys[:-1], path, create=not delete)
            last = keys[-1]
            if isinstance(last, int):
                if not isinstance(parent, list) or last >= len(parent):
                    raise KeyError("%s: no such element" % path)
            elif not isinstance(parent, dict):
                raise KeyError("%s: %s is not a mapping" % (path, _describe(keys[:-1])))
            elif delete and last not in parent:
                raise KeyError("%s: not set in this scenario" % path)
            if delete:
                del parent[last]
            else:
                parent[last] = _copy.deepcopy(value)
        name = self._name if self._name.endswith(" (edited)") else self._name + " (edited)"
        self._init_tree(tree, name, self._dir or _folder_of(self))

    def save(self, path):
        """Writes Scenario.yaml to `path` (`fleetplan simulate PATH` then runs the same)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.yaml)

    def __repr__(self):
        return "Scenario(%r from %s, digest %s)" % (self.name, self.source, self.digest[:12])


def _folder_of(s):
    return os.path.dirname(s._value) if s._kind == "path" else ""


def as_scenario(x):
    return x if isinstance(x, Scenario) else Scenario(x)
