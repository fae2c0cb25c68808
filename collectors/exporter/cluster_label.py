"""The cluster label added to a family's stored lines when a scrape serves them.

The sink stores each group's lines without a cluster label (collectors/storage/metric_lines.py); the label
is added when serving, by `with_label` over a family's joined lines: one `bytes.replace` of
`\nFAMILY{` at line starts. That is exact because every line of a family's hash starts with the
family's name and `{` (or a space, for a line without labels, which `with_label` handles too), and
no line holds a raw newline before its end (the text format escapes one in a label value as `\n`),
so the pattern matches line starts only, whatever a group or topic is called
(tests/test_alerts_clusters_metrics.py holds this with hypothesis on odd names).
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def with_label(family: str, lines: list[bytes], label: bytes) -> bytes:
    """The lines of one family (each ending in a newline) joined, with `label` (`name="value"`,
    escaped) first in every line's labels. See the module's docstring for why a replace at line
    starts is exact. Lines that are not of the family are left out (see `label_lines`)."""
    return bytes(label_lines(family, lines, label)[0])


def label_lines(family: str, lines: list[bytes], label: bytes) -> tuple[memoryview, int]:
    """`with_label` as a view (which the scrape's final join copies once), and how many lines were
    left out. At 50,000 groups the replace meets ~500,000 line starts; its search per match costs
    more than copying the text.

    The sink's lines always start with the family's name; were a stored value not to (garbage), or
    cut short of its newline (gluing two groups' lines into one), Prometheus would refuse the whole
    scrape, every cluster's. The replaces' growth says how many line starts they labelled, and two
    counts how many lines there are and how often the family's name occurs: unless all three agree
    (and the text ends with a newline), the lines are taken one by one (parsed: slow, but only then)
    and those that are not one sample of the family are left out. A group or topic whose name holds
    the family's name takes that path too, and is served. A malformed value within a line of the
    family's (never written by the sink) is not looked for."""
    name = family.encode()
    text = b"".join([b"\n", *lines])
    size = len(text)
    text = text.replace(b"\n" + name + b"{", b"\n" + name + b"{" + label + b",")
    labelled = (len(text) - size) // (len(label) + 1)
    size = len(text)
    # A line without labels (none is stored today; a line of an older or newer sink might be).
    text = text.replace(b"\n" + name + b" ", b"\n" + name + b"{" + label + b"} ")
    labelled += (len(text) - size) // (len(label) + 2)
    lines_ = text.count(b"\n") - 1
    if labelled == lines_ and text.endswith(b"\n") and text.count(name) == lines_:
        return memoryview(text)[1:], 0
    return _labelled_lines(family, lines, label)


def _labelled_lines(family: str, lines: list[bytes], label: bytes) -> tuple[memoryview, int]:
    """The slow path of `label_lines`, for a family whose stored lines are not all samples of it."""
    name = family.encode()
    good: list[bytes] = []
    dropped = 0
    for value in lines:
        parts = value.split(b"\n")
        if parts[-1]:
            dropped += 1  # a value cut short of its newline: its last line is not whole
        for line in parts[:-1]:
            if not line:
                continue
            if line.startswith(name + b"{"):
                out = name + b"{" + label + b"," + line[len(name) + 1 :]
            elif line.startswith(name + b" "):
                out = name + b"{" + label + b"}" + line[len(name) :]
            else:
                dropped += 1
                continue
            try:
                samples = [s for f in text_string_to_metric_families(out.decode() + "\n") for s in f.samples]
            except Exception:
                samples = []
            if len(samples) == 1 and samples[0].name == family:
                good.append(out + b"\n")
            else:
                dropped += 1
    return memoryview(b"".join(good)), dropped
