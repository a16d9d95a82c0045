"""Per-request records as a numpy structured array or as the dicts of requests.jsonl.

The native part hands over columns (python/src/records.h); both forms here have the
fields of requests.jsonl (docs/records.md) under the same names:

  field                        numpy dtype   absent (JSON null or key left out)
  id                           int64
  class                        str           -
  tenant                       str           "" (the key is left out)
  arrival_s                    float64       -
  first_token_s, finish_s      float64       nan (null)
  status                       str           -
  input_tokens, output_tokens  int64         -
  itl_max_ms                   float64       nan (left out)
  valid                        bool          - (the key is left out when true)
  replica                      int64         -1 (left out)
  matched_prefix_tokens        int64         -1 (left out)
  queue_age_at_assignment_ms   float64       nan (left out)

Times are the run's integer nanoseconds divided by 1e9 (seconds) or 1e6 (ms), as the
records file writes them, so both forms hold exactly the file's numbers. Rows are in the
order requests.jsonl lists them (request completion).
"""

from . import _core

try:
    import numpy
except ImportError:  # the module works without numpy; records are then dicts
    numpy = None

_INT64 = "<i8"


def _put_names(out, field, names, codes):
    """out[field] = names[codes], copied as raw fixed-width bytes: numpy's str assignment
    into a field of a structured array costs ~15x more (0.8 s for a million rows)."""
    width = out.dtype.fields[field][0].itemsize
    raw = numpy.dtype((numpy.void, width))
    out[field].view(raw)[:] = names.astype(out.dtype.fields[field][0]).view(raw)[codes]


class RecordColumns:
    """The raw columns of one run (bytes per field) and the names they refer to."""

    def __init__(self, columns, classes, tenants):
        self._columns = columns
        self.classes = list(classes)
        self.tenants = list(tenants)
        self.size = len(columns["id"]) // 8

    def __len__(self):
        return self.size

    def to_numpy(self):
        """A numpy structured array (fields in the table above). Needs numpy."""
        if numpy is None:
            raise ImportError("numpy is not installed; use to_dicts()")
        c = {k: v for k, v in self._columns.items()}
        col = lambda name, dtype: numpy.frombuffer(c[name], dtype=dtype)
        def width(names):
            return max([1] + [len(n) for n in names])
        statuses = numpy.array(_core.record_statuses)
        classes = numpy.array(self.classes or [""], dtype="<U%d" % width(self.classes))
        tenants = numpy.array(self.tenants + [""], dtype="<U%d" % width(self.tenants))
        dtype = [
            ("id", _INT64),
            ("class", classes.dtype),
            ("tenant", tenants.dtype),
            ("arrival_s", "<f8"),
            ("first_token_s", "<f8"),
            ("finish_s", "<f8"),
            ("status", statuses.dtype),
            ("input_tokens", _INT64),
            ("output_tokens", _INT64),
            ("itl_max_ms", "<f8"),
            ("valid", "?"),
            ("replica", _INT64),
            ("matched_prefix_tokens", _INT64),
            ("queue_age_at_assignment_ms", "<f8"),
        ]
        out = numpy.empty(self.size, dtype=dtype)
        out["id"] = col("id", _INT64)
        _put_names(out, "class", classes, col("class_id", "<i4"))
        _put_names(out, "tenant", tenants, col("tenant", "<i4"))  # -1 picks the "" appended last
        _put_names(out, "status", statuses, col("status", "i1"))
        for name in ("input_tokens", "output_tokens", "replica", "matched_prefix_tokens"):
            out[name] = col(name, _INT64)
        out["valid"] = col("valid", "u1").astype(bool)
        for name, source, scale in (
            ("arrival_s", "arrival_ns", 1e9),
            ("first_token_s", "first_token_ns", 1e9),
            ("finish_s", "finish_ns", 1e9),
            ("itl_max_ms", "itl_max_ns", 1e6),
            ("queue_age_at_assignment_ms", "queue_age_ns", 1e6),
        ):
            ns = col(source, _INT64)
            values = ns / scale
            values[ns < 0] = numpy.nan
            out[name] = values
        return out

    def to_dicts(self):
        """One dict per record, exactly json.loads of each line of requests.jsonl."""
        c = {k: memoryview(v) for k, v in self._columns.items()}
        ids = c["id"].cast("q")
        class_id, tenant = c["class_id"].cast("i"), c["tenant"].cast("i")
        status, valid = c["status"].cast("b"), c["valid"].cast("B")
        arrival, first, finish = c["arrival_ns"].cast("q"), c["first_token_ns"].cast("q"), c["finish_ns"].cast("q")
        inp, outp = c["input_tokens"].cast("q"), c["output_tokens"].cast("q")
        itl, age = c["itl_max_ns"].cast("q"), c["queue_age_ns"].cast("q")
        replica, matched = c["replica"].cast("q"), c["matched_prefix_tokens"].cast("q")
        statuses = _core.record_statuses
        rows = []
        for i in range(self.size):
            r = {"id": ids[i], "class": self.classes[class_id[i]]}
            if tenant[i] >= 0:
                r["tenant"] = self.tenants[tenant[i]]
            r["arrival_s"] = arrival[i] / 1e9
            r["first_token_s"] = first[i] / 1e9 if first[i] >= 0 else None
            r["finish_s"] = finish[i] / 1e9 if finish[i] >= 0 else None
            r["status"] = statuses[status[i]]
            r["input_tokens"] = inp[i]
            r["output_tokens"] = outp[i]
            if itl[i] >= 0:
                r["itl_max_ms"] = itl[i] / 1e6
            if not valid[i]:
                r["valid"] = False
            if replica[i] >= 0:
                r["replica"] = replica[i]
            if matched[i] >= 0:
                r["matched_prefix_tokens"] = matched[i]
            if age[i] >= 0:
                r["queue_age_at_assignment_ms"] = age[i] / 1e6
            rows.append(r)
        return rows
