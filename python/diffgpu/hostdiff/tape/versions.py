"""What a recording keeps (record.py): the `Version`s of each buffer (its
contents between two recorded writes, with the copy made before one was
overwritten after a read), the recorded operations (`Op`: a launch,
`dg.copy` or `dg.fill`, its plan and the versions it read) and their
arguments as the reverse sees them (`Item`: an array argument with the
version it read).

The hook makes `Op`s and `Version`s without their constructors
(`object.__new__` and the fields that differ; the others are class values:
docs/tape.md "Host time per launch"); `_prime` keeps their attributes
inline.
"""
from __future__ import annotations

from diffgpu.hostdiff.tape.arrays import as_root

_new = object.__new__


class Version:
    """A buffer's contents between two recorded writes.

    One is made per buffer a launch writes, so its constructor sets only
    the three fields that differ; the others start as the class's values
    (no `__slots__`: CPython keeps such an object's attributes inline, no
    dictionary is made). `last` is the latest operation that read it (None:
    never read, so never copied), set per read; the first reader (`first`)
    and the list of readers are derived from the operations when asked for
    (`Recording.first_readers`, `Recording.readers`), not kept per launch."""

    last = None
    first = None
    #: the copy made before it was overwritten (None: live): a numpy array, or
    #: on a GPU the pool allocation holding it, at byte offset `at` there
    copy = _array = None
    at = 0

    def __init__(self, buf, creator, number: int):
        self.buf, self.creator, self.number = buf, creator, number

    @property
    def array(self):
        """The copy made before the version was overwritten, as an array laid
        out as its buffer (made at first use from the raw copy), or None
        (the version is live: its buffer's own array)."""
        a = self._array
        if a is None and self.copy is not None:
            a = self._array = as_root(self.buf.root, self.copy, self.at)
        return a

    @array.setter
    def array(self, a) -> None:
        self.copy = self._array = a
        self.at = 0


class Item:
    """One array argument of an operation."""

    __slots__ = ("view", "name", "read", "write", "version", "is_float")

    def __init__(self, view, name, read, write, version):
        self.view, self.name, self.read, self.write = view, name, read, write
        self.version = version  # the version read (None if only written)
        self.is_float = view.is_float


class Op:
    """One recorded operation: a launch, `dg.copy` or `dg.fill`.

    `plan` is (label, kernel, grid, block, roles, alias groups, outputs
    written whole, parts, buffers read, buffers written, buffers touched,
    arguments): a launch's is shared by every launch of its kernel with the
    same launch key (the same arrays, scalars of equal type and value: the
    plan's arguments are the first such launch's). A launch's Items
    (`args`) are made from the plan's arguments and the versions it read
    when first asked for."""

    # (as Version: no `__slots__`, the fields a launch does not set are the class's)
    kind = "launch"
    _args = None
    snaps = ()       # versions copied before this operation ran
    value = None
    rev = None       # its reverse's plan, from the first reverse (reverse.py `_plan`)

    def __init__(self, index, plan, read):
        self.index, self.plan = index, plan
        self._read = read  # the versions read, one per buffer of plan[8]

    label = property(lambda self: self.plan[0])
    kernel = property(lambda self: self.plan[1])
    grid = property(lambda self: self.plan[2])
    block = property(lambda self: self.plan[3])
    roles = property(lambda self: self.plan[4])    # per parameter: "input", "output", ...
    groups = property(lambda self: self.plan[5])   # parameters that are one view
    full = property(lambda self: self.plan[6])     # outputs whose every element it writes

    @property
    def args(self) -> list:
        """Per parameter: an Item, or the scalar value."""
        a = self._args
        if a is None:
            read = self._read
            a = list(self.plan[11])
            for i, view, name, r, w, at in self.plan[7]:
                a[i] = Item(view, name, r, w, read[at] if r else None)
            self._args = a
        return a

    @args.setter
    def args(self, a) -> None:
        self._args = a

    def items(self):
        return [a for a in self.args if isinstance(a, Item)]

    def __repr__(self) -> str:
        return f"#{self.index} {self.plan[0]}"  # "#3 step", "#4 dg.copy"


def _prime(cls, names) -> None:
    """Give `cls`'s instances all of `names` as inline attributes. CPython
    3.11 keeps the attributes of an instance without `__slots__` in an
    array shared in layout by the class's instances, whose list of names
    stops growing once a few dozen instances exist: a name first set on an
    instance after that (a version's `at`, first set by a GPU copy after a
    host tape made many versions) would make that instance and every later
    one a dictionary of its own. One instance made here, with every field
    set, puts every name in that list first."""
    o = _new(cls)
    for name in names:
        setattr(o, name, None)


_prime(Version, ("buf", "creator", "number", "last", "first", "copy", "_array", "at"))
_prime(Op, ("index", "plan", "_read", "kind", "_args", "snaps", "value", "rev"))
