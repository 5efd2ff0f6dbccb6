"""Make the demo data set in this folder (fixed seed; run again to get the same files).

    .venv/bin/python data/make_demo_data.py

A small web-search evaluation: 40 queries of four types (navigational, informational, transactional,
long-tail), 360 documents, 5 graders with different habits and 3 ranking systems whose quality
differs by query type. Files:

* ``queries.csv`` (query_id,text,query_type), ``documents.csv`` (doc_id,title,body), ``graders.csv``
  (grader,display_name);
* ``runs/bm25.run``, ``runs/dense.run``, ``runs/hybrid.run``: TREC runs (qid Q0 docid rank score tag),
  10 to 20 documents per query;
* ``judgments.csv`` (query_id,doc_id,grader,grade,batch): a 0-3 batch ``demo-0-3`` pooled at depth 10
  from the three runs, each item graded by 3 of the 5 graders;
* ``truth.csv`` (query_id,doc_id,relevance) and ``grader_profiles.json``: the hidden true relevance and
  how each simulated grader deviates from it. The tool never imports these; ``ndcg-labeling demo``
  uses them only to play the graders of a freshly pooled batch.

Design (so the demo has something to find): bm25 is best on navigational queries, dense on
informational and long-tail ones, hybrid on transactional ones; ``chloe`` grades leniently
(+0.8 grade on average) and ``dev`` is noisy.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from ndcg_labeling.demo.run import simulate_grade  # the same graders the demo plays

HERE = Path(__file__).resolve().parent
SEED = 20240607
DEPTH = 10
OVERLAP = 3
BATCH = "demo-0-3"

GRADERS = {  # name: (display name, bias in grades, noise standard deviation)
    "ana": ("Ana (careful)", 0.0, 0.35),
    "ben": ("Ben (careful)", 0.0, 0.45),
    "chloe": ("Chloe (lenient)", 0.8, 0.45),
    "dev": ("Dev (noisy)", 0.0, 1.1),
    "emma": ("Emma (a little strict)", -0.3, 0.45),
}

# How strongly each system's score follows the true relevance, per query type (noise sd is 1).
QUALITY = {
    "bm25": {"navigational": 3.2, "informational": 0.8, "transactional": 1.3, "long-tail": 0.4},
    "dense": {"navigational": 0.9, "informational": 2.6, "transactional": 1.2, "long-tail": 2.3},
    "hybrid": {"navigational": 1.8, "informational": 1.7, "transactional": 2.8, "long-tail": 1.4},
}

QUERIES = {
    "navigational": [
        ("github login", "GitHub"), ("python documentation", "Python docs"), ("netflix sign in", "Netflix"),
        ("bbc news homepage", "BBC News"), ("wikipedia main page", "Wikipedia"), ("gmail inbox", "Gmail"),
        ("spotify web player", "Spotify"), ("linkedin jobs", "LinkedIn Jobs"), ("ikea official site", "IKEA"),
        ("national weather service", "the National Weather Service"),
    ],
    "informational": [
        ("how do vaccines work", "vaccines"), ("why is the sky blue", "the colour of the sky"),
        ("causes of inflation", "inflation"), ("how to compost at home", "home composting"),
        ("symptoms of vitamin d deficiency", "vitamin D deficiency"),
        ("history of the printing press", "the printing press"), ("what is a black hole", "black holes"),
        ("how does wifi work", "Wi-Fi"), ("benefits of strength training", "strength training"),
        ("photosynthesis explained", "photosynthesis"),
    ],
    "transactional": [
        ("buy running shoes", "running shoes"), ("cheap flights to lisbon", "flights to Lisbon"),
        ("book hotel in kyoto", "hotels in Kyoto"), ("order pizza near me", "pizza delivery"),
        ("download vlc player", "VLC media player"), ("rent a car in denver", "car rental in Denver"),
        ("noise cancelling headphones deal", "noise cancelling headphones"),
        ("subscribe to the economist", "The Economist subscription"), ("buy used iphone 13", "a used iPhone 13"),
        ("concert tickets berlin", "concert tickets in Berlin"),
    ],
    "long-tail": [
        ("best hiking boots for wide feet under 150 dollars", "hiking boots for wide feet"),
        ("how to fix a leaking kitchen faucet with a single handle", "single-handle faucet leaks"),
        ("vegan lasagna recipe without tofu or cashews", "vegan lasagna without tofu"),
        ("can i charge an old laptop with a usb c phone charger", "USB-C laptop charging"),
        ("what to plant in a shady north facing garden", "plants for north-facing shade"),
        ("pandas groupby multiple columns sum and count", "pandas groupby with several aggregations"),
        ("why does my cat knock things off the table at night", "cats knocking things over"),
        ("tax rules for freelancers working remotely from portugal", "freelancer tax in Portugal"),
        ("train from vienna to budapest with a bicycle", "bikes on the Vienna-Budapest train"),
        ("difference between baking soda and baking powder in cookies", "baking soda vs baking powder"),
    ],
}

TEMPLATES = {  # grade: [(title, body)], filled with the query's subject
    3: {
        "navigational": ("{S} - official site", "The official home of {S}. Sign in, manage your account and find "
                                                "everything {S} offers, straight from the source."),
        "informational": ("{S}: a complete explanation", "A clear, well-sourced explanation of {S}, from the "
                                                         "basics to the details, with diagrams and references."),
        "transactional": ("{S} - order online today", "Compare options for {S}, see prices and availability, "
                                                      "and complete your purchase or booking in a few steps."),
        "long-tail": ("Answered: {S}", "A detailed answer about {S}, written by someone who solved exactly this "
                                       "problem, with steps, caveats and alternatives."),
    },
    2: [("A practical guide to {S}", "Most of what you need about {S}, with a few tips; some details are left "
                                     "out or slightly dated."),
        ("{S} explained in five minutes", "A short overview of {S} that answers the common questions."),
        ("Reviews and comparisons: {S}", "Independent reviews comparing the main options for {S}.")],
    1: [("Forum thread mentioning {S}", "A discussion that touches on {S} in passing among other topics."),
        ("News: a story related to {S}", "A news item loosely related to {S}; it does not answer the question."),
        ("Glossary entry near {S}", "A one-line definition of a related term, with a link to more about {S}.")],
    0: [("Unrelated page about gardening tools", "A catalogue of rakes, spades and hoses."),
        ("Celebrity gossip roundup", "This week's red-carpet looks and rumours."),
        ("Local council meeting minutes", "Minutes of the planning committee, item 4: parking permits.")],
}

DISTRACTORS = [
    ("Top ten cat videos of the year", "A compilation of the funniest cat clips."),
    ("Stock market closes mixed", "Markets ended the day with small gains in tech and losses in energy."),
    ("Recipe: classic tomato soup", "Tomatoes, onion, garlic and stock, simmered and blended."),
    ("How to tie a tie", "Four knots with step-by-step pictures."),
    ("Football transfer rumours", "The latest talk about summer signings."),
    ("Privacy policy", "How this site handles your data and cookies."),
    ("Horoscope for the week", "What the stars say about work and love."),
    ("Used cars for sale", "Thousands of listings from dealers and private sellers."),
    ("Learn to knit in a weekend", "Casting on, knit and purl, and a first scarf."),
    ("Airport parking rates", "Short-stay and long-stay prices for the main airports."),
]


def true_grades(rng: np.random.Generator) -> list[int]:
    """The true relevance of a query's 8 own documents: one perfect, two good, two partial, three off."""
    return [3, 2, 2, 1, 1, 0, 0, 0] if rng.random() < 0.85 else [3, 3, 2, 1, 1, 1, 0, 0]


def main() -> None:
    rng = np.random.default_rng(SEED)
    queries, documents, truth = [], [], {}
    n_doc = 0

    def new_doc(title: str, body: str) -> str:
        nonlocal n_doc
        n_doc += 1
        doc_id = f"D{n_doc:04d}"
        documents.append((doc_id, title, body))
        return doc_id

    distractors = [new_doc(t, b) for t, b in DISTRACTORS * 4]
    for qtype, items in QUERIES.items():
        for text, subject in items:
            qid = f"Q{len(queries) + 1:03d}"
            queries.append((qid, text, qtype))
            truth[qid] = {}
            for grade in true_grades(rng):
                if grade == 3:
                    title, body = TEMPLATES[3][qtype]
                else:
                    title, body = TEMPLATES[grade][int(rng.integers(len(TEMPLATES[grade])))]
                doc_id = new_doc(title.format(S=subject), body.format(S=subject))
                truth[qid][doc_id] = grade

    runs: dict[str, dict[str, list[tuple[str, float]]]] = {s: {} for s in QUALITY}
    for qid, _text, qtype in queries:
        own = list(truth[qid])
        others = list(rng.choice(distractors, size=12, replace=False))
        candidates = own + others
        rel = np.array([truth[qid].get(d, 0) for d in candidates], dtype=float)
        for system, quality in QUALITY.items():
            scores = quality[qtype] * rel + rng.normal(0.0, 1.0, size=len(candidates))
            length = int(rng.integers(10, 21))
            order = np.argsort(-scores, kind="stable")[:length]
            runs[system][qid] = [(candidates[i], round(float(scores[i]) + 10.0, 4)) for i in order]

    # the pre-graded batch: pool the top DEPTH of every run, OVERLAP graders per item in rotation
    names = list(GRADERS)
    judgments = []
    item = 0
    for qid, _text, _qtype in queries:
        pool = sorted({d for s in runs for d, _ in runs[s][qid][:DEPTH]})
        for doc_id in pool:
            for j in range(OVERLAP):
                grader = names[(item + j) % len(names)]
                _, bias, noise = GRADERS[grader]
                judgments.append((qid, doc_id, grader, simulate_grade(truth[qid].get(doc_id, 0), bias, noise, rng),
                                  BATCH))
            item += 1

    def write(name: str, header: list[str], rows: list[tuple]) -> None:
        with open(HERE / name, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(header)
            w.writerows(rows)

    write("queries.csv", ["query_id", "text", "query_type"], queries)
    write("documents.csv", ["doc_id", "title", "body"], documents)
    write("graders.csv", ["grader", "display_name"], [(g, v[0]) for g, v in GRADERS.items()])
    write("judgments.csv", ["query_id", "doc_id", "grader", "grade", "batch"], judgments)
    write("truth.csv", ["query_id", "doc_id", "relevance"],
          [(q, d, g) for q, docs in truth.items() for d, g in docs.items()])
    (HERE / "grader_profiles.json").write_text(json.dumps(
        {g: {"bias": b, "noise": n} for g, (_, b, n) in GRADERS.items()}, indent=2) + "\n", encoding="utf-8")
    (HERE / "runs").mkdir(exist_ok=True)
    for system, per_query in runs.items():
        lines = [f"{q} Q0 {d} {r} {s} {system}" for q, docs in per_query.items()
                 for r, (d, s) in enumerate(docs, start=1)]
        (HERE / "runs" / f"{system}.run").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(queries)} queries, {len(documents)} documents, {len(judgments)} judgments, "
          f"{sum(len(v) for r in runs.values() for v in r.values())} ranking rows written to {HERE}")


if __name__ == "__main__":
    main()
