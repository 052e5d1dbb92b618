"""Parsers for dbench, postmark and filebench text output."""

import re

_DBENCH_TP = re.compile(r"^Throughput\s+([\d.]+)\s+MB/sec\s+(\d+)\s+clients?\s+(\d+)\s+procs?"
                        r"\s+max_latency=([\d.]+)\s*ms", re.M)


def parse_dbench(text):
    """dbench 4 summary: 'Throughput 1140.64 MB/sec  2 clients  2 procs  max_latency=354.824 ms'."""
    m = _DBENCH_TP.search(text)
    if not m:
        raise ValueError("no 'Throughput ... MB/sec' line in dbench output")
    ops = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and re.fullmatch(r"[A-Za-z]+", f[0]) and f[1].isdigit():
            try:
                ops[f[0]] = {"count": int(f[1]), "avg_ms": float(f[2]), "max_ms": float(f[3])}
            except ValueError:
                continue
    return {"mb_s": float(m.group(1)), "clients": int(m.group(2)),
            "max_latency_ms": float(m.group(4)), "ops": ops}


def parse_postmark(text):
    """PostMark 1.51 report.  Its own rates use whole seconds, so the harness
    divides the counts parsed here by its own wall-clock measurement."""
    def num(pattern):
        m = re.search(pattern, text)
        if not m:
            raise ValueError(f"postmark output lacks {pattern!r}")
        return float(m.group(1))
    return {
        "seconds_total": num(r"(\d+) seconds total"),
        "created": num(r"(\d+) created"),
        "read": num(r"(\d+) read \("),
        "appended": num(r"(\d+) appended"),
        "deleted": num(r"(\d+) deleted"),
        "mb_read": num(r"([\d.]+) (?:megabytes|kilobytes|bytes) read"),
        "mb_written": num(r"([\d.]+) (?:megabytes|kilobytes|bytes) written"),
    }


_FB_SUMMARY = re.compile(
    r"IO Summary:\s+(\d+)\s+ops\s+([\d.]+)\s+ops/s\s+(?:\(?)(\d+)/(\d+)\s+rd/wr\)?\s+"
    r"([\d.]+)mb/s\s+([\d.]+)ms/op")


def parse_filebench(text):
    """filebench 1.4/1.5 end-of-run summary line, e.g.
    '29.081: IO Summary: 2097152 ops 69899.876 ops/s 6354/12709 rd/wr 1637.4mb/s 0.135ms/op'."""
    m = _FB_SUMMARY.search(text)
    if not m:
        raise ValueError("no 'IO Summary:' line in filebench output")
    flows = {}
    for fm in re.finditer(r"^(?:[\d.]+:\s+)?(\S+)\s+(\d+)ops\s+([\d.]+)ops/s\s+([\d.]+)mb/s\s+"
                          r"([\d.]+)ms/op", text, re.M):
        flows[fm.group(1)] = {"ops": int(fm.group(2)), "ops_s": float(fm.group(3)),
                              "mb_s": float(fm.group(4)), "ms_op": float(fm.group(5))}
    return {"ops": int(m.group(1)), "ops_s": float(m.group(2)), "rd_s": int(m.group(3)),
            "wr_s": int(m.group(4)), "mb_s": float(m.group(5)), "ms_op": float(m.group(6)),
            "flows": flows}
