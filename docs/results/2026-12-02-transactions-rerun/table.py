#!/usr/bin/env python3
"""The transactions page's table: each peer's paired ratio (its time over Strata's, the
median of the rounds, with its range) per row, and a line per peer. usage: table.py JSON"""
import json, sys
d = json.load(open(sys.argv[1]))
peers = ["rocksdb-optimistic", "rocksdb-pessimistic", "lmdb", "fjall-tx", "sqlite3-wal", "wiredtiger-btree", "kyoto-treedb"]
names = {"rocksdb-optimistic": "RocksDB optimistic", "rocksdb-pessimistic": "RocksDB pessimistic", "lmdb": "LMDB",
         "fjall-tx": "fjall (one writer)", "sqlite3-wal": "SQLite (WAL)", "wiredtiger-btree": "WiredTiger B-tree", "kyoto-treedb": "Kyoto TreeDB"}
def rowname(s):
    g, r, b = s["group"], s["row"], s["benchmark"]
    if b == "randomtransaction":
        keys = "100,000" if r == "low contention" else "1,000"
        return f"randomtransaction, {keys} keys a set, {g}"
    if b == "fillseq":
        return "fillseq (load)"
    return f"readmodifywrite (YCSB-F mix), {g.replace(', loaded','')}"
print("| row | " + " | ".join(names[p] for p in peers) + " |")
print("|---|" + "---:|" * len(peers))
behind = {}
for s in d["summary"]:
    cells = []
    for p in peers:
        q = s["paired"].get(p)
        if not q:
            cells.append("n/a"); continue
        m = f"{q['median']:.2f}"
        if q["median"] < 1:
            m = f"**{m}**"; behind.setdefault(p, []).append((rowname(s), q["median"]))
        cells.append(f"{m} ({q['min']:.2f}-{q['max']:.2f})")
    print(f"| {rowname(s)} | " + " | ".join(cells) + " |")
print()
for p in peers:
    rs = [s["paired"][p]["median"] for s in d["summary"] if p in s["paired"]]
    print(p, "ahead on", sum(r >= 1 for r in rs), "of", len(rs), "range", f"{min(rs):.2f}-{max(rs):.2f}", "behind:", behind.get(p, []))
