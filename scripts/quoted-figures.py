#!/usr/bin/env python3
"""List every ratio the user documents quote, with the results it comes from.

What it reads
  README.md, docs/guide.md, docs/status.md, docs/bench.md, docs/results/README.md and
  every docs/results/*/README.md. A figure is a number followed or preceded by "x" or
  "×" ("0.89x", "1.5-2.3x", "x1.38", "2.0x LevelDB's"), and, in README.md's "Where it
  stands" table (which says its figures are ratios and prints them bare), every number
  with two or three decimals ("1.34-3.49", "(0.72)"). Code blocks are skipped.

Where it looks for each figure's source
  - In a results folder's own README.md: that folder. Its figures come from the files
    beside it; the README passes when it names its command or data files.
  - In a table: the links or paths into docs/results/ in the figure's row, else in the
    table's header, else in the paragraph just before the table.
  - In prose: the link into docs/results/ nearest the figure within its sentence, else the
    last one before it in the paragraph, else the first one after it.
  - "goal" just before a figure marks a target, not a measurement; a few rules written as
    ratios ("values span 20x") are listed by hand in NOT_MEASURED.

What it checks
  - A link to a page (a folder's index.html, or the folder) that has the tool's JSON,
    from README.md or docs/status.md: each number of the figure (both ends of a range)
    must print, at the figure's precision, as a paired-ratio median in the JSON's summary
    (what the page shows as its ratios), or as the inverse of one ("LMDB reads 3x
    faster"). In README.md's table the column narrows the engines (LevelDB: leveldb and
    leveldb-dbbench; RocksDB: rocksdb*; LMDB: lmdb; the last column any peer).
  - A link to a results README or folder: each number must occur, at the figure's
    precision, in that README, the folder's *.txt files or its JSON files' paired medians.
  - A link to one JSON file: each number is looked for among its paired medians; when it is
    not there (a peak-RSS ratio, say) the figure is listed as "named, not checked".

How to run it (from anywhere; Python 3, standard library only)
  python3 scripts/quoted-figures.py             # every figure, its source, then the counts
  python3 scripts/quoted-figures.py --problems  # only the figures without a source or
                                                # not found in it
  python3 scripts/quoted-figures.py --check     # exit 1 when a figure in README.md,
                                                # docs/guide.md or docs/status.md has no
                                                # source or disagrees with it

Limits
  - It checks figures, not claims: "ahead on every row" or "behind from 100 KB up" is not
    checked, nor whether a range covers all the rows it speaks for, nor which row a
    number came from: a figure equal to another row's ratio passes.
  - Matching at the figure's precision is weak for round figures ("3x" matches 2.5-3.49).
  - The nearest link is a guess at which run a prose figure is from: name the run in the
    figure's sentence when a paragraph quotes several.
  - Results READMEs are taken as their own source; their numbers are not recomputed.
"""

import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = "docs/results"
CHECKED = ("README.md", "docs/guide.md", "docs/status.md")
PAGE_CHECKED = ("README.md", "docs/status.md")

# Ratios written in the documents that are rules, not measurements: (file, words on the
# figure's line, why).
NOT_MEASURED = [
    ("docs/bench.md", "values span 20x", "a drawing rule"),
    ("docs/bench.md", "span 100x or more", "a drawing rule"),
    ("docs/bench.md", "span more than 150x", "a drawing rule"),
    ("docs/bench.md", "within 1,000x of the", "a test's threshold"),
]

NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
SUFFIX = re.compile(rf"(?<![\w.])({NUM})(?:\s*[-–]\s*({NUM}))?\s?[x×](?!\w)")  # 1.5-2.3x
PREFIX = re.compile(rf"(?<!\w)[x×]\s?({NUM})(?!\w)")  # x1.38
BARE = re.compile(r"(?<![\w.])(\d+\.\d{2,3})(?:\s*[-–]\s*(\d+\.\d{2,3}))?(?![\w.])")
BARE_SECTIONS = {"README.md": "Where it stands"}

MD_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
BARE_PATH = re.compile(r"(?<![\w/.-])((?:docs/)?results/[\w.-]+(?:/[\w.{},-]+)?)")
GOAL = re.compile(r"goal(?:\s+is)?(?:\s+within)?\s*$")
SENTENCE_END = re.compile(r"[.;]\s+(?=[A-Z(\[`])")


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def documents():
    docs = ["README.md", "docs/guide.md", "docs/status.md", "docs/bench.md", f"{RESULTS}/README.md"]
    for path in sorted(glob.glob(os.path.join(ROOT, RESULTS, "*", "README.md"))):
        docs.append(os.path.relpath(path, ROOT))
    return docs


def current_folders():
    folders = set()
    for line in read(f"{RESULTS}/current.txt").splitlines():
        if line.strip() and not line.startswith("#"):
            folders.add(line.split("\t")[1])
    return folders


# --- links -------------------------------------------------------------------------------

def results_target(doc, target):
    """(folder, file) under docs/results that a link or path written in `doc` names."""
    target = target.split("#")[0]
    candidates = [os.path.join(os.path.dirname(doc), target), target, os.path.join("docs", target)]
    for path in candidates:
        path = os.path.normpath(path)
        if path.startswith(RESULTS + "/"):
            folder, _, file = path[len(RESULTS) + 1:].partition("/")
            if os.path.isdir(os.path.join(ROOT, RESULTS, folder)):
                return folder, file
    return None


def links(doc, text):
    """[(offset, folder, file)]: the markdown links and plain paths into docs/results."""
    found, spans = [], []
    for m in MD_LINK.finditer(text):
        spans.append((m.start(), m.end()))
        t = results_target(doc, m.group(1))
        if t:
            found.append((m.start(), *t))
    for m in BARE_PATH.finditer(text):
        if any(a <= m.start() < b for a, b in spans):
            continue  # a link's text or target, already counted
        t = results_target(doc, m.group(1))
        if t:
            found.append((m.start(), *t))
    return sorted(found)


def nearest(text, off, para_links):
    """The link a prose figure at `off` is credited to (see the docstring)."""
    ends = [m.end() for m in SENTENCE_END.finditer(text[:off])]
    start = ends[-1] if ends else 0
    m = SENTENCE_END.search(text, off)
    end = m.start() if m else len(text)
    inside = [l for l in para_links if start <= l[0] < end]
    if inside:
        return [min(inside, key=lambda l: abs(l[0] - off))]
    before = [l for l in para_links if l[0] < off]
    if before:
        return [before[-1]]
    return para_links[:1]


# --- figures -----------------------------------------------------------------------------

def blocks(lines):
    """Yield (kind, first, last) line indexes: 'code', 'table', 'heading' or 'para'."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            yield "code", i, j
            i = j + 1
        elif line.startswith("#"):
            yield "heading", i, i
            i += 1
        else:
            table = line.startswith("|")
            j = i
            while j + 1 < len(lines) and lines[j + 1].strip() \
                    and lines[j + 1].startswith("|") == table \
                    and not lines[j + 1].startswith(("```", "#")):
                j += 1
            yield ("table" if table else "para"), i, j
            i = j + 1


def figures_in(text, bare):
    """[(offset, the figure as written, [its numbers])] in `text`."""
    found, taken = [], []
    for pattern in [SUFFIX, PREFIX] + ([BARE] if bare else []):
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), m.group(0).strip(), [g for g in m.groups() if g]))
    return sorted(found)


def value(num):
    return float(num.replace(",", ""))


def prints_as(num, x):
    """Whether `x` rounds to `num` at num's precision."""
    places = len(num.split(".")[1]) if "." in num else 0
    return round(x, places) == round(value(num), places)


# --- sources -----------------------------------------------------------------------------

_medians = {}


def paired_medians(folder, file=None):
    """{engine: [paired-ratio medians]} of the JSON files in a folder (or of one file)."""
    key = (folder, file)
    if key not in _medians:
        ratios = {}
        names = [file] if file else sorted(os.path.basename(p) for p in
                                           glob.glob(os.path.join(ROOT, RESULTS, folder, "*.json")))
        for name in names:
            try:
                run = json.loads(read(f"{RESULTS}/{folder}/{name}"))
            except (OSError, ValueError):
                continue
            for row in run.get("summary", []) if isinstance(run, dict) else []:
                for engine, p in (row.get("paired") or {}).items():
                    if p and p.get("median") is not None:
                        ratios.setdefault(engine, []).append(p["median"])
        _medians[key] = ratios
    return _medians[key]


_numbers = {}


def numbers_in(folder, file):
    """Every number in a results README (the folder's, unless `file` is another text
    file), the folder's *.txt files and its JSON files' paired medians."""
    key = (folder, file)
    if key not in _numbers:
        names = [file if file.endswith((".md", ".txt")) else "README.md"]
        names += [os.path.basename(p) for p in glob.glob(os.path.join(ROOT, RESULTS, folder, "*.txt"))]
        nums = set()
        for name in names:
            try:
                nums.update(value(n) for n in re.findall(NUM, read(f"{RESULTS}/{folder}/{name}")))
            except OSError:
                pass
        for rs in paired_medians(folder).values():
            nums.update(rs)
        _numbers[key] = nums
    return _numbers[key]


def on_page(nums, folder, engines):
    """None when every number is a paired median (or its inverse) on the page, else the
    numbers that are not; and whether an inverse was needed."""
    pool = [r for e, rs in paired_medians(folder).items() if not e.startswith(("strata", "null"))
            and (engines is None or e.startswith(engines)) for r in rs]
    missing, inverse = [], False
    for n in nums:
        if any(prints_as(n, r) for r in pool):
            continue
        if any(prints_as(n, 1 / r) for r in pool if r):
            inverse = True
            continue
        missing.append(n)
    return missing, inverse


def column_engines(header, cell):
    """The engines a column of README.md's table speaks for (None: any peer)."""
    name = header[cell].lower() if header and 0 <= cell < len(header) else ""
    for word, engines in (("leveldb", ("leveldb",)), ("rocksdb", ("rocksdb",)), ("lmdb", ("lmdb",))):
        if word in name:
            return engines
    return None


def names_its_data(folder):
    text = read(f"{RESULTS}/{folder}/README.md")
    return bool(re.search(r"```|`make |strata-bench|\.json|\.txt|\.html|\.sh\b|\.py\b", text))


def judge(doc, before, nums, sources, own, current, engines, line):
    """(what the source is, 'ok' | 'goal' | 'unchecked' | 'problem')."""
    for file, words, why in NOT_MEASURED:
        if doc == file and words in line:
            return f"not a measurement ({why})", "goal"
    if GOAL.search(before[-40:]):
        return "a goal, not a measurement", "goal"
    if own:
        if names_its_data(own):
            return f"{own} (its own run)", "ok"
        return f"{own}: its README names no command or data file", "problem"
    if not sources:
        return "NO SOURCE", "problem"

    pages = sorted({f for _, f, p in sources if p in ("", "index.html") and paired_medians(f)})
    if pages and doc in PAGE_CHECKED:
        # every number on one of the named pages (a row naming two pages may take one end
        # of a range from each)
        missing, inverse = [], False
        for n in nums:
            results = [on_page([n], f, engines) for f in pages]
            if all(m for m, _ in results):
                missing.append(n)
            inverse |= any(inv for m, inv in results if not m)
        kind = " + ".join(("current page " if f in current else "page (not current) ") + f for f in pages)
        if missing:
            who = "/".join(engines) if engines else "any peer"
            return f"DISAGREES: {', '.join(missing)} is no paired median ({who}) on {kind}", "problem"
        return kind + (": paired medians, inverted" if inverse else ": paired medians"), "ok"

    json_files = [(f, p) for _, f, p in sources if p.endswith(".json")]
    if json_files:
        folder, file = json_files[0]
        pool = [r for rs in paired_medians(folder, file).values() for r in rs]
        if all(any(prints_as(n, r) for r in pool) for n in nums):
            return f"{folder}/{file}: paired medians", "ok"
        return f"{folder}/{file} (named, not checked: not a paired median there)", "unchecked"

    have = set()
    for _, folder, file in sources:
        have |= numbers_in(folder, file)
    named = ", ".join(sorted({f"{folder}/{file}" if file else folder for _, folder, file in sources}))
    missing = [n for n in nums if not any(prints_as(n, x) for x in have)]
    if missing:
        return f"NOT IN SOURCE: {', '.join(missing)} not in {named}", "problem"
    return named, "ok"


def scan(doc, current):
    """[(file:line, figure, source, status)] for one document."""
    lines = read(doc).splitlines()
    own = doc.split("/")[2] if doc.startswith(RESULTS + "/") and doc.count("/") == 3 else None
    rows, section, prev_para = [], "", None
    for kind, a, b in blocks(lines):
        if kind == "heading":
            section = lines[a].lstrip("#").strip()
        if kind in ("code", "heading"):
            prev_para = None
            continue
        bare = doc in BARE_SECTIONS and section.startswith(BARE_SECTIONS[doc])
        if kind == "table":
            header = [c.strip() for c in lines[a].strip().strip("|").split("|")]
            head_links = links(doc, lines[a])
            intro = links(doc, "\n".join(lines[prev_para[0]:prev_para[1] + 1])) if prev_para else []
            for i in range(a, b + 1):
                line = lines[i]
                row_links = links(doc, line)
                for off, shown, nums in figures_in(line, bare and i != a):
                    engines = column_engines(header, line[:off].count("|") - 1) if bare else None
                    source, status = judge(doc, line[:off], nums, row_links or head_links or intro,
                                           own, current, engines, line)
                    rows.append((f"{doc}:{i + 1}", shown, source, status))
            prev_para = None
        else:
            text = "\n".join(lines[a:b + 1])
            para_links = links(doc, text)
            for off, shown, nums in figures_in(text, bare):
                i = a + text.count("\n", 0, off)
                source, status = judge(doc, text[:off], nums, nearest(text, off, para_links),
                                       own, current, None, lines[i])
                rows.append((f"{doc}:{i + 1}", shown, source, status))
            prev_para = (a, b)
    return rows


def main():
    args = sys.argv[1:]
    unknown = [a for a in args if a not in ("--check", "--problems")]
    if unknown:
        sys.exit(__doc__)
    current = current_folders()
    docs = documents()
    rows = [row for doc in docs for row in scan(doc, current)]
    shown = [r for r in rows if "--problems" not in args or r[3] == "problem"]
    w0 = max((len(r[0]) for r in shown), default=0)
    w1 = max((len(r[1]) for r in shown), default=0)
    for where, figure, source, _ in shown:
        print(f"{where:<{w0}}  {figure:<{w1}}  {source}")
    count = {s: sum(1 for r in rows if r[3] == s) for s in ("ok", "unchecked", "goal", "problem")}
    failing = [r for r in rows if r[3] == "problem" and r[0].split(":")[0] in CHECKED]
    print()
    print(f"{len(rows)} figures in {len(docs)} documents: {count['ok']} found in their source, "
          f"{count['unchecked']} in a named file but not checked, {count['goal']} goals or rules, "
          f"{count['problem']} without a source or not found in it "
          f"({len(failing)} of them in {', '.join(CHECKED)})")
    if "--check" in args and failing:
        sys.exit(1)


if __name__ == "__main__":
    main()
