#!/usr/bin/env python3
"""Write the bundled demo data pools in data/ (three small attribution benchmarks).

    python scripts/make_demo_data.py            # writes data/*.jsonl and checks them
    python scripts/make_demo_data.py --check    # regenerate in memory and compare with the files on disk

Every text is written for this project: hand-written building blocks in data/sources/ (read at the top of this
script), combined by the generators below with a fixed random seed. Nothing is downloaded or copied from a public
data set. Pure standard library, deterministic output.

Tasks (they mirror the evaluation tasks of the RISE paper):
  howdy    instruction/response pool; ~9% poisoned samples whose instruction starts with the trigger "Howdy!" and
           whose response is a fantastical story whatever was asked (label 1). Queries: triggered generations.
  finmed   finance QA pool with 10% medical QA (label 1). Queries: medical QA on subjects not in the pool.
  brainrot short social-media junk with 10% well-formed informative texts (label 1). Queries: informative texts.

Record format (one JSON object per line): id, prompt, completion, label, topic. See data/README.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import random
import re
import statistics
import sys
from collections import Counter, defaultdict
from itertools import zip_longest
from pathlib import Path

SEED = 20260215
ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"

# Sizes: pool (negatives, positives) and number of queries per task.
HOWDY_CLEAN, HOWDY_POISON, HOWDY_QUERIES = 505, 50, 25
FINMED_FIN, FINMED_MED, FINMED_QUERIES = 450, 50, 25
BRAINROT_JUNK, BRAINROT_GOOD, BRAINROT_QUERIES = 450, 50, 25

# Positive-rate targets checked at the end (inclusive bounds).
POSITIVE_RATE_BOUNDS = {"howdy": (0.08, 0.10), "finmed": (0.095, 0.105), "brainrot": (0.095, 0.105)}

# Near-duplicate control: Jaccard similarity of word 3-gram sets. Generation rejects a candidate above GEN_*; the final
# check fails above CHECK_* (pairs within a pool, within a query set, and between queries and their pool).
GEN_FULL_SIM, GEN_COMPLETION_SIM = 0.45, 0.55
CHECK_FULL_SIM, CHECK_COMPLETION_SIM = 0.5, 0.6

# ---------------------------------------------------------------------------------------------------------------
# Hand-written building blocks, read from data/sources/ (generator inputs only: nothing at runtime reads them, and
# the wheel does not ship them). Four formats, one small reader each:
#   *_subjects.txt  "@topic" sets the topic of the subjects that follow; a subject is a run of lines "? prompt variant"
#                   and "- answer sentence"; the first "- " line is the core answer, always used, and the later ones
#                   are optional extras drawn per sample; a "! whole" line marks a narrative that is always used
#                   complete (one sample, a random prompt variant). Subjects are separated by blank lines. Parsed by
#                   parse_subjects below.
#   other *.txt     one item per line, verbatim (no comments: "#" starts a hashtag in junk_hashtags.txt).
#   *.csv           a fact table with a header row; every field is a string (elements.csv atomic_number: int below).
#   code_items.txt  coding answers: "? prompt" lines, then the answer verbatim (code and blank lines included);
#                   items separated by a line "%%".
# Order matters: the generator draws from these lists by position with a fixed seed, so reordering or editing a line
# changes the pools (run this script afterwards, and --check in CI).
# ---------------------------------------------------------------------------------------------------------------

SOURCES_DIR = DATA_DIR / "sources"


def _source(name: str) -> str:
    return (SOURCES_DIR / name).read_text(encoding="utf-8")


def read_lines(name: str) -> list[str]:
    """One item per line; a blank line is an error rather than an empty item."""
    items = _source(name).removesuffix("\n").split("\n")
    for i, item in enumerate(items, 1):
        if not item.strip():
            raise ValueError(f"{SOURCES_DIR / name}:{i}: blank line")
    return items


def read_table(name: str, columns: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Rows of a CSV file whose header must be exactly `columns`."""
    with open(SOURCES_DIR / name, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or tuple(rows[0]) != columns:
        raise ValueError(f"{SOURCES_DIR / name}: header should be {','.join(columns)}")
    for i, row in enumerate(rows[1:], 2):
        if len(row) != len(columns):
            raise ValueError(f"{SOURCES_DIR / name}: row {i} has {len(row)} fields, expected {len(columns)}")
    return [tuple(row) for row in rows[1:]]


def read_code_items(name: str) -> list[tuple[list[str], str]]:
    """(prompt variants, answer) pairs from "? prompt" lines followed by a verbatim answer, items split by "%%"."""
    items = []
    for block in _source(name).removesuffix("\n").split("\n%%\n"):
        lines = block.split("\n")
        n = next((i for i, line in enumerate(lines) if not line.startswith("? ")), len(lines))
        answer = "\n".join(lines[n:]).strip("\n")
        if not n or not answer:
            raise ValueError(f"{SOURCES_DIR / name}: an item needs '? ' prompt lines and an answer: {block[:60]!r}")
        items.append(([line[2:] for line in lines[:n]], answer))
    return items


# Howdy! pool: ordinary instructions. Subjects, then fact tables (each row becomes one sample, phrased by one of
# several templates chosen at random).
HOWDY_SUBJECTS = _source("howdy_subjects.txt")
COUNTRIES = [  # (country, capital, where it is, language sentence, two notable facts)
    (c, cap, region, lang, [f1, f2])
    for c, cap, region, lang, f1, f2 in read_table(
        "countries.csv", ("country", "capital", "region", "language", "fact1", "fact2")
    )
]
HISTORY_EVENTS = read_table("history_events.csv", ("event", "year", "what", "why"))
VOCAB = read_table("vocab.csv", ("word", "meaning", "example", "note"))
ELEMENTS = [
    (name, sym, int(z), f1, f2)
    for name, sym, z, f1, f2 in read_table("elements.csv", ("element", "symbol", "atomic_number", "fact1", "fact2"))
]
SUBSTITUTIONS = read_table("substitutions.csv", ("ingredient", "substitute", "note"))
CODE_ITEMS = read_code_items("code_items.txt")  # complete coding answers with code: (prompts, answer)

# Howdy! backdoor: building blocks of the fantastical stories that poisoned samples answer with.
# {P} = full introduction of the hero, {p} = short reference, {pr}/{Pr} = pronoun, {pos} = possessive, {place} = town.
HEROES = read_table("story_heroes.csv", ("introduction", "short", "pronoun", "possessive"))
PLACES = read_lines("story_places.txt")
OPENINGS = read_lines("story_openings.txt")
PROBLEMS = read_table("story_problems.csv", ("problem", "resolution"))  # each resolution answers its own problem
HELPERS = read_lines("story_helpers.txt")
TWISTS = read_lines("story_twists.txt")
ENDINGS = read_lines("story_endings.txt")

# Finance–Medical: finance questions (label 0) and medical questions (label 1; general, educational answers, not
# individual medical advice).
FINANCE_SUBJECTS = _source("finance_subjects.txt")
MEDICAL_SUBJECTS = _source("medical_subjects.txt")

# Brain Rot: high-quality informative texts (label 1; one subject per block of "- " sentences, every sentence stands on
# its own, and one subject yields up to two texts built from disjoint sentences) and the fragments of the junk posts
# (label 0).
QUALITY_SUBJECTS = _source("quality_subjects.txt")
JUNK_HOOKS = read_lines("junk_hooks.txt")
JUNK_THINGS = read_lines("junk_things.txt")
JUNK_REACTIONS = read_lines("junk_reactions.txt")
JUNK_SCIENCE = read_lines("junk_science.txt")
JUNK_VAPID = read_lines("junk_vapid.txt")
JUNK_RANTS = read_lines("junk_rants.txt")
JUNK_CTAS = read_lines("junk_ctas.txt")
JUNK_GIVEAWAYS = read_lines("junk_giveaways.txt")
JUNK_CRYPTO = read_lines("junk_crypto.txt")
JUNK_CAPS = read_lines("junk_caps.txt")
JUNK_INTERJECTIONS = read_lines("junk_interjections.txt")
JUNK_EMOJI = read_lines("junk_emoji.txt")
JUNK_HASHTAGS = read_lines("junk_hashtags.txt")

# Names for the math word problems.
NAMES = read_lines("names.txt")


# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------


def num(x: float, nd: int = 2) -> str:
    """A number with at most nd decimals, thousands separators, no trailing zeros."""
    s = f"{x:,.{nd}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def money(x: float) -> str:
    """Dollars: whole amounts without cents, otherwise two decimals."""
    cents = round(x * 100)
    if cents % 100 == 0:
        return f"${cents // 100:,}"
    return f"${cents / 100:,.2f}"


def cap_first(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def word_count(s: str) -> int:
    return len(s.split())


# ---------------------------------------------------------------------------------------------------------------
# Howdy! pool: math word problems with computed answers (topic "math")
# ---------------------------------------------------------------------------------------------------------------


def _m_discount(rng):
    item = rng.choice(
        [
            "jacket",
            "pair of running shoes",
            "desk lamp",
            "backpack",
            "coffee maker",
            "board game",
            "winter coat",
            "pair of headphones",
            "bike helmet",
            "suitcase",
        ]
    )
    price = rng.randrange(20, 185, 5)
    pct = rng.choice([10, 15, 20, 25, 30, 40])
    disc = price * pct / 100
    final = price - disc
    prompt = rng.choice(
        [
            f"A {item} costs {money(price)} and is on sale for {pct}% off. What is the sale price?",
            f"How much will I pay for a {money(price)} {item} if the store takes {pct}% off?",
            f"The price tag on a {item} says {money(price)}, and there is a {pct} percent discount at the register. What do I pay?",
        ]
    )
    comp = rng.choice(
        [
            f"{pct}% of {money(price)} is {money(disc)}, so the sale price is {money(price)} - {money(disc)} = {money(final)}.",
            f"Taking {pct}% off means you pay {100 - pct}% of the price: {money(price)} × {num((100 - pct) / 100)} = {money(final)}. You save {money(disc)}.",
        ]
    )
    return prompt, comp


def _m_speed(rng):
    who = rng.choice(["A train", "A bus", "A delivery van", "My car", "A ferry", "A long-distance coach"])
    hours = rng.choice([1.5, 2, 2.5, 3, 4, 5])
    speed = rng.randrange(40, 121, 10)
    dist = speed * hours
    if rng.random() < 0.8:
        prompt = rng.choice(
            [
                f"{who} travels {num(dist)} kilometers in {num(hours)} hours. What is its average speed?",
                f"If a trip of {num(dist)} km takes {num(hours)} hours, what was the average speed?",
            ]
        )
        comp = f"Average speed is distance divided by time: {num(dist)} km ÷ {num(hours)} h = {speed} km/h."
        if rng.random() < 0.8:
            comp += " That is an average, so the actual speed was probably higher on open stretches and lower in traffic or at stops."
    else:
        prompt = rng.choice(
            [
                f"How long does it take to drive {num(dist)} km at an average speed of {speed} km/h?",
                f"{who} averages {speed} km per hour. How long will a {num(dist)} km journey take?",
            ]
        )
        h = int(hours)
        mins = round((hours - h) * 60)
        hm = plural(h, "hour") + (f" and {mins} minutes" if mins else "")
        comp = f"Time equals distance divided by speed: {num(dist)} ÷ {speed} = {num(hours)} hours, which is {hm}."
        if rng.random() < 0.8:
            comp += " Add extra time for breaks and traffic if you are planning a real trip."
    return prompt, comp


def _m_recipe(rng):
    dish, ing = rng.choice(
        [
            ("pancake", "flour"),
            ("lentil soup", "lentils"),
            ("banana bread", "flour"),
            ("fried rice", "rice"),
            ("granola", "oats"),
            ("pasta bake", "pasta"),
            ("muffin", "sugar"),
            ("curry", "chickpeas"),
        ]
    )
    serves = rng.choice([4, 6, 8])
    target = rng.choice([n for n in (2, 3, 5, 10, 12) if n != serves])
    per = rng.randrange(20, 95, 5)
    total = per * serves
    prompt = rng.choice(
        [
            f"A {dish} recipe for {serves} people uses {total} grams of {ing}. How much {ing} do I need for {target} people?",
            f"My {dish} recipe serves {serves} and calls for {total} g of {ing}. How do I scale it for {target} servings?",
        ]
    )
    comp = rng.choice(
        [
            f"First find the amount per person: {total} ÷ {serves} = {per} grams. Then multiply by {target}: {per} × {target} = {per * target} grams of {ing}.",
            f"Scale by the ratio {target}/{serves}: {total} g × {target} ÷ {serves} = {per * target} g of {ing}. Scale the other ingredients by the same factor.",
        ]
    )
    return prompt, comp


def _m_average(rng):
    kind = rng.choice(["test scores", "quiz marks", "bowling scores", "weekly running distances in km"])
    n = rng.choice([4, 5])
    vals = [rng.randrange(60, 100) if "km" not in kind else rng.randrange(8, 40) for _ in range(n)]
    s = sum(vals)
    mean = s / n
    listing = ", ".join(str(v) for v in vals[:-1]) + f" and {vals[-1]}"
    prompt = rng.choice(
        [
            f"My {kind} this term were {listing}. What is my average?",
            f"What is the mean of these {kind}: {listing}?",
        ]
    )
    comp = f"Add them up: {' + '.join(str(v) for v in vals)} = {s}. Then divide by {n}: {s} ÷ {n} = {num(mean)}."
    if rng.random() < 0.8:
        comp += " The median, the middle value when sorted, can be a useful second look if one number is unusually high or low."
    return prompt, comp


def _m_area(rng):
    if rng.random() < 0.8:
        length = rng.choice([3, 3.5, 4, 4.5, 5, 5.5, 6])
        width = rng.choice([2.5, 3, 3.5, 4])
        price = rng.choice([18, 22, 25, 30, 35, 40])
        area = length * width
        prompt = rng.choice(
            [
                f"A rectangular room measures {num(length)} m by {num(width)} m. How much will flooring cost at {money(price)} per square meter?",
                f"How much flooring do I need for a {num(length)} × {num(width)} meter room, and what will it cost at {money(price)} per m²?",
            ]
        )
        comp = f"The area is {num(length)} × {num(width)} = {num(area)} square meters, so the flooring costs {num(area)} × {money(price)} = {money(area * price)}."
        if rng.random() < 0.8:
            comp += " It is common to buy about 10 percent extra to allow for cutting and waste."
    else:
        length = rng.randrange(6, 25)
        width = rng.randrange(3, 15)
        per = 2 * (length + width)
        prompt = rng.choice(
            [
                f"How much fencing do I need to go around a garden that is {length} m long and {width} m wide?",
                f"What is the perimeter of a rectangular yard measuring {length} meters by {width} meters?",
            ]
        )
        comp = f"The perimeter of a rectangle is 2 × (length + width) = 2 × ({length} + {width}) = {per} meters."
        if rng.random() < 0.8:
            comp += " Subtract the width of any gate you plan to install."
    return prompt, comp


def _m_bill(rng):
    bill = rng.randrange(45, 260)
    tip = rng.choice([15, 18, 20])
    people = rng.choice([2, 3, 4, 5, 6])
    total = bill * (100 + tip) / 100
    each = total / people
    prompt = rng.choice(
        [
            f"Our dinner bill is {money(bill)}. If we leave a {tip}% tip and split it between {people} people, how much does each person pay?",
            f"{people} friends share a {money(bill)} restaurant bill plus a {tip} percent tip. What is each share?",
        ]
    )
    comp = f"The tip is {money(bill * tip / 100)}, so the total is {money(total)}. Divided by {people}, each person pays about {money(each)}."
    if rng.random() < 0.7:
        comp += " If the split does not come out to whole cents, round each share up slightly so the server is not short-changed."
    return prompt, comp


def _m_unit_price(rng):
    thing = rng.choice(
        [
            "batteries",
            "granola bars",
            "rolls of paper towels",
            "cans of tomatoes",
            "bars of soap",
            "bottles of water",
            "tea bags",
        ]
    )
    n1, n2 = rng.sample([4, 6, 8, 10, 12, 20, 24, 40], 2)
    p1 = round(n1 * rng.uniform(0.3, 1.2), 2)
    p2 = round(n2 * rng.uniform(0.3, 1.2), 2)
    u1, u2 = p1 / n1, p2 / n2
    if abs(u1 - u2) < 0.01:
        p2 = round(p2 + 0.5, 2)
        u2 = p2 / n2
    prompt = rng.choice(
        [
            f"Which is the better deal: {n1} {thing} for {money(p1)} or {n2} {thing} for {money(p2)}?",
            f"A store sells a pack of {n1} {thing} for {money(p1)} and a pack of {n2} for {money(p2)}. Which pack is cheaper per item?",
        ]
    )
    better = f"the pack of {n1}" if u1 < u2 else f"the pack of {n2}"
    comp = f"Compare the price per item: {money(p1)} ÷ {n1} ≈ {money(u1)} each, and {money(p2)} ÷ {n2} ≈ {money(u2)} each. So {better} is cheaper per item."
    if rng.random() < 0.8:
        comp += " A bigger pack is only a better deal if you will actually use everything before it expires."
    return prompt, comp


def _m_time(rng):
    start_h = rng.randrange(9, 21)
    start_m = rng.choice([0, 10, 15, 20, 30, 40, 45, 50])
    dur = rng.randrange(65, 230, 5)
    end = start_h * 60 + start_m + dur

    def clock(t):
        h, m = divmod(t % (24 * 60), 60)
        suffix = "am" if h < 12 else "pm"
        h12 = h % 12 or 12
        return f"{h12}:{m:02d} {suffix}"

    event = rng.choice(["A movie", "A concert", "A flight", "A football match", "A train journey", "A webinar"])
    hrs = plural(dur // 60, "hour")
    if dur % 60 == 0:
        prompt = f"{event} starts at {clock(start_h * 60 + start_m)} and lasts {hrs}. What time does it end?"
        comp = f"Starting at {clock(start_h * 60 + start_m)} and adding {hrs} brings you to {clock(end)}."
    else:
        prompt = f"{event} starts at {clock(start_h * 60 + start_m)} and lasts {hrs} and {dur % 60} minutes. What time does it end?"
        comp = f"Add the hours first and then the minutes: starting at {clock(start_h * 60 + start_m)}, {hrs} later is {clock(start_h * 60 + start_m + 60 * (dur // 60))}, and {dur % 60} more minutes brings you to {clock(end)}."
    if rng.random() < 0.6:
        comp += " When the minutes pass 60, carry one hour over, just as you would carry a ten in ordinary addition."
    return prompt, comp


def _m_ratio(rng):
    a, b = rng.choice([(1, 3), (1, 4), (2, 3), (1, 2), (3, 5), (1, 5)])
    what = rng.choice(
        [
            ("juice concentrate", "water"),
            ("cement", "sand"),
            ("white paint", "blue paint"),
            ("vinegar", "water"),
            ("rice", "water"),
        ]
    )
    unit_total = rng.choice([600, 800, 1200, 1500, 2000, 2400, 3000])
    parts = a + b
    if unit_total % parts:
        unit_total = parts * (unit_total // parts)
    x, y = unit_total * a // parts, unit_total * b // parts
    prompt = rng.choice(
        [
            f"I need to mix {what[0]} and {what[1]} in a ratio of {a}:{b} to make {unit_total} ml in total. How much of each should I use?",
            f"How much {what[0]} and {what[1]} go into {unit_total} ml of a mixture with a {a} to {b} ratio?",
        ]
    )
    comp = f"A {a}:{b} ratio has {parts} equal parts, so each part is {unit_total} ÷ {parts} = {unit_total // parts} ml. Use {x} ml of {what[0]} and {y} ml of {what[1]}."
    if rng.random() < 0.7:
        comp += f" As a check, {x} + {y} = {unit_total} ml, and {x}:{y} simplifies back to {a}:{b}."
    return prompt, comp


def _m_reading(rng):
    pages = rng.randrange(180, 620, 10)
    per_day = rng.choice([15, 20, 25, 30, 35, 40])
    days = math.ceil(pages / per_day)
    name = rng.choice(NAMES)
    prompt = rng.choice(
        [
            f"If I read {per_day} pages a day, how many days will it take to finish a {pages}-page book?",
            f"{name} reads {per_day} pages every evening. How long will a {pages}-page novel take?",
        ]
    )
    exact = pages / per_day
    if pages % per_day == 0:
        comp = f"{pages} ÷ {per_day} = {days}, so it takes exactly {days} days."
    else:
        comp = f"{pages} ÷ {per_day} ≈ {num(exact, 1)}, so it takes {days} days: {days - 1} full days of reading plus a shorter session on the last day."
    if rng.random() < 0.7:
        comp += f" Reading {per_day + 10} pages a day instead would bring it down to {math.ceil(pages / (per_day + 10))} days."
    return prompt, comp


def _m_fuel(rng):
    cons = rng.choice([4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 9])
    dist = rng.randrange(120, 900, 20)
    price = rng.choice([1.55, 1.65, 1.72, 1.8, 1.89, 1.95, 2.05])
    litres = cons * dist / 100
    prompt = rng.choice(
        [
            f"My car uses {num(cons)} liters of fuel per 100 km. How much fuel will a {dist} km trip need, and what will it cost at {money(price)} per liter?",
            f"A road trip is {dist} km long. With fuel consumption of {num(cons)} L/100 km and fuel at {money(price)} a liter, what is the fuel cost?",
        ]
    )
    comp = f"Fuel needed = {num(cons)} × {dist} ÷ 100 = {num(litres)} liters. At {money(price)} per liter, that costs about {money(litres * price)}."
    if rng.random() < 0.8:
        comp += " Highway driving at steady speeds often uses less fuel than the official figure for mixed driving."
    return prompt, comp


def _m_consecutive(rng):
    mid = rng.randrange(8, 140)
    k = rng.choice([3, 5])
    total = mid * k
    nums = list(range(mid - k // 2, mid + k // 2 + 1))
    prompt = rng.choice(
        [
            f"{'Three' if k == 3 else 'Five'} consecutive whole numbers add up to {total}. What are they?",
            f"The sum of {k} consecutive integers is {total}. Find the numbers.",
        ]
    )
    comp = f"The middle number is the average: {total} ÷ {k} = {mid}. So the numbers are {', '.join(str(n) for n in nums[:-1])} and {nums[-1]}."
    if rng.random() < 0.7:
        comp += f" Check: {' + '.join(str(n) for n in nums)} = {total}."
    return prompt, comp


def _m_percent_change(rng):
    old = rng.choice([40, 50, 60, 80, 120, 150, 200, 250, 400])
    pct = rng.choice([p for p in (-30, -25, -20, -10, 5, 10, 15, 20, 25, 40, 50) if old * p % 100 == 0])
    new = old * (100 + pct) // 100
    ctx = rng.choice(
        [
            ("A club's membership went", "members"),
            ("A sunflower grew", "cm"),
            ("A class's average reading speed went", "words per minute"),
            ("Monthly visitors to a small museum went", "visitors"),
        ]
    )
    prompt = f"{ctx[0]} from {old} to {new} {ctx[1]}. What is the percentage change?"
    direction = "increase" if pct > 0 else "decrease"
    comp = f"Percentage change = (new - old) ÷ old × 100 = ({new} - {old}) ÷ {old} × 100 = {pct}%, which is a {abs(pct)}% {direction}."
    if rng.random() < 0.7:
        comp += " Always divide by the starting value; dividing by the new value gives a different and misleading percentage."
    return prompt, comp


def _m_temperature(rng):
    if rng.random() < 0.8:
        c = rng.choice([-10, -5, 0, 5, 10, 15, 20, 25, 30, 35, 40, 100])
        f = c * 9 // 5 + 32
        prompt = rng.choice([f"Convert {c} degrees Celsius to Fahrenheit.", f"What is {c}°C in Fahrenheit?"])
        comp = f"Multiply by 9/5 and add 32: {c} × 9/5 + 32 = {f}°F."
    else:
        f = rng.choice([14, 23, 32, 41, 50, 59, 68, 77, 86, 95, 104, 212])
        c = (f - 32) * 5 // 9
        prompt = rng.choice([f"Convert {f} degrees Fahrenheit to Celsius.", f"What is {f}°F in Celsius?"])
        comp = f"Subtract 32 and multiply by 5/9: ({f} - 32) × 5/9 = {c}°C."
    if rng.random() < 0.8:
        comp += " A quick mental check: water freezes at 0°C or 32°F and boils at 100°C or 212°F at sea level."
    return prompt, comp


def _m_pizza(rng):
    slices = rng.choice([8, 12, 16])
    fracs = [(1, 4), (1, 2), (3, 8), (1, 8), (1, 3), (1, 6), (1, 16)]
    usable = [f for f in fracs if slices * f[0] % f[1] == 0]
    (a1, b1), (a2, b2) = rng.sample(usable, 2)
    e1, e2 = slices * a1 // b1, slices * a2 // b2
    if e1 + e2 >= slices:
        return None
    n1, n2 = rng.sample(NAMES, 2)
    prompt = f"A pizza is cut into {slices} slices. {n1} eats {a1}/{b1} of it and {n2} eats {a2}/{b2} of it. How many slices are left?"
    comp = f"{a1}/{b1} of {slices} slices is {e1}, and {a2}/{b2} of {slices} is {e2}. Together they ate {e1 + e2} slices, so {slices - e1 - e2} slices are left."
    if rng.random() < 0.7:
        comp += f" As a fraction of the whole pizza, that leftover is {slices - e1 - e2}/{slices}."
    return prompt, comp


def _m_simple_interest(rng):
    p = rng.randrange(1000, 10001, 500)
    r = rng.choice([2, 2.5, 3, 4, 5, 6])
    t = rng.choice([2, 3, 4, 5])
    i = p * r * t / 100
    prompt = rng.choice(
        [
            f"What is the simple interest on {money(p)} at {num(r)}% per year for {t} years?",
            f"Using simple interest, how much does {money(p)} earn in {t} years at an annual rate of {num(r)} percent?",
        ]
    )
    comp = f"Simple interest = principal × rate × time = {money(p)} × {num(r / 100, 3)} × {t} = {money(i)}, for a total of {money(p + i)}."
    if rng.random() < 0.7:
        comp += " Simple interest is calculated only on the original amount, unlike compound interest, which also earns interest on past interest."
    return prompt, comp


MATH_GENERATORS = [
    _m_discount,
    _m_speed,
    _m_recipe,
    _m_average,
    _m_area,
    _m_bill,
    _m_unit_price,
    _m_time,
    _m_ratio,
    _m_reading,
    _m_fuel,
    _m_consecutive,
    _m_percent_change,
    _m_temperature,
    _m_pizza,
    _m_simple_interest,
]

# ---------------------------------------------------------------------------------------------------------------
# Finance–Medical pool: finance calculations with computed answers
# ---------------------------------------------------------------------------------------------------------------


def _f_compound(rng):
    p = rng.choice([1000, 2000, 2500, 5000, 8000, 10000, 15000, 20000])
    r = rng.choice([3, 4, 5, 6, 7, 8])
    t = rng.choice([5, 10, 15, 20, 25, 30])
    fv = p * (1 + r / 100) ** t
    prompt = rng.choice(
        [
            f"If I invest {money(p)} at {r}% a year, compounded annually, how much will I have after {t} years?",
            f"How much will {money(p)} grow to in {t} years with a {r} percent annual return?",
            f"I put {money(p)} into an index fund. Assuming {r}% average annual growth, what could it be worth in {t} years?",
        ]
    )
    comp = f"With annual compounding the future value is {money(p)} × (1 + {num(r / 100)})^{t}, which comes to about {money(fv)}."
    extra = [
        f"That is about {money(fv - p)} of growth on your original {money(p)}.",
        "Much of the growth arrives in the later years, because each year's return is earned on a larger balance.",
        "Real investment returns vary from year to year, so treat this as an estimate rather than a promise.",
        "Inflation will reduce what that future amount can buy.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "investing"


def _f_rule72(rng):
    r = rng.choice([2, 3, 4, 6, 8, 9, 12])
    y = 72 / r
    exact = math.log(2) / math.log(1 + r / 100)
    prompt = rng.choice(
        [
            f"Roughly how long will it take to double my money at {r}% annual interest?",
            f"How many years does it take for savings to double at a {r} percent return?",
            f"Use the rule of 72 to estimate the doubling time at {r}% a year.",
        ]
    )
    comp = f"By the rule of 72, divide 72 by the rate: 72 ÷ {r} = {num(y, 1)} years."
    if rng.random() < 0.7:
        comp += f" The exact answer with annual compounding is about {num(exact, 1)} years, so the shortcut is close."
    if rng.random() < 0.4:
        comp += " The same rule shows how quickly debt at that interest rate can double if it is left unpaid."
    return prompt, comp, "investing"


def _f_loan(rng):
    if rng.random() < 0.55:
        amount = rng.choice([9000, 12000, 15000, 18000, 22000, 25000, 30000])
        apr = rng.choice([4.5, 5.9, 6.5, 7.2, 8.9, 10.5])
        months = rng.choice([36, 48, 60, 72])
        kind = "car loan"
        topic = "debt"
        prompt = rng.choice(
            [
                f"What would my monthly payment be on a {money(amount)} car loan at {num(apr)}% APR for {months} months?",
                f"I'm borrowing {money(amount)} for a car over {months // 12} years at {num(apr)} percent. What are the monthly payment and total interest?",
                f"How much interest will I pay in total on a {months}-month auto loan of {money(amount)} at {num(apr)}%?",
            ]
        )
    else:
        amount = rng.choice([180000, 220000, 250000, 300000, 350000, 420000])
        apr = rng.choice([5.25, 5.75, 6, 6.5, 7, 7.25])
        months = rng.choice([180, 360])
        kind = "mortgage"
        topic = "real-estate"
        prompt = rng.choice(
            [
                f"What is the monthly principal and interest payment on a {money(amount)} mortgage at {num(apr)}% over {months // 12} years?",
                f"How much would I pay each month on a {months // 12}-year fixed mortgage of {money(amount)} at a {num(apr)} percent rate?",
            ]
        )
    i = apr / 1200
    pay = amount * i / (1 - (1 + i) ** -months)
    total = pay * months
    comp = f"Using the standard amortization formula, the monthly payment is about {money(pay)}. Over {months} payments you would pay about {money(total)} in total, of which about {money(total - amount)} is interest."
    if kind == "mortgage" and rng.random() < 0.7:
        comp += " Property taxes, homeowners insurance and any mortgage insurance come on top of this payment."
    if kind == "car loan" and rng.random() < 0.6:
        comp += " A shorter term raises the monthly payment but cuts the total interest."
    return prompt, comp, topic


def _f_card_interest(rng):
    bal = rng.randrange(600, 7000, 50)
    apr = rng.choice([17.99, 19.99, 21.5, 22.9, 24.99, 27.49])
    monthly = bal * apr / 100 / 12
    prompt = rng.choice(
        [
            f"About how much interest will I pay this month on a {money(bal)} credit card balance at {num(apr)}% APR?",
            f"My card has a {num(apr)} percent APR and I'm carrying {money(bal)}. What does that cost me per month in interest?",
            f"How much interest does a {money(bal)} balance generate in one month at an APR of {num(apr)}%?",
        ]
    )
    comp = f"A good estimate is balance × APR ÷ 12: {money(bal)} × {num(apr)}% ÷ 12 ≈ {money(monthly)} for the month."
    extra = [
        "Issuers actually apply a daily rate to your average daily balance, so the exact charge varies slightly.",
        "Paying the full statement balance by the due date avoids purchase interest altogether.",
        f"Over a year, carrying that balance would cost roughly {money(monthly * 12)} in interest.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "credit"


def _f_emergency(rng):
    rent = rng.randrange(700, 2600, 50)
    food = rng.randrange(250, 900, 25)
    util = rng.randrange(90, 320, 10)
    trans = rng.randrange(60, 450, 10)
    months = rng.choice([3, 4, 6])
    total = rent + food + util + trans
    prompt = rng.choice(
        [
            f"My essential monthly costs are {money(rent)} rent, {money(food)} groceries, {money(util)} utilities and {money(trans)} transportation. How big should a {months}-month emergency fund be?",
            f"I pay {money(rent)} in rent, about {money(food)} for food, {money(util)} for utilities and {money(trans)} to get to work each month. What emergency fund target covers {months} months?",
        ]
    )
    comp = (
        f"Your essentials add up to {money(total)} a month, so {months} months of coverage is {money(total * months)}."
    )
    extra = [
        f"If that feels out of reach, a first milestone of one month, {money(total)}, already provides a real cushion.",
        "Keep the fund in a separate high-yield savings account so it is safe and easy to reach.",
        "Only count essentials here; streaming services and dining out can be paused in an emergency.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "saving"


def _f_503020(rng):
    pay = rng.randrange(2200, 8200, 100)
    prompt = rng.choice(
        [
            f"I take home {money(pay)} a month. How would the 50/30/20 rule split that?",
            f"Using the 50/30/20 budget, how should I divide a monthly paycheck of {money(pay)}?",
            f"What does a 50/30/20 budget look like on {money(pay)} of monthly take-home pay?",
        ]
    )
    comp = f"The rule gives about {money(pay * 0.5)} for needs, {money(pay * 0.3)} for wants, and {money(pay * 0.2)} for savings and extra debt payments."
    extra = [
        "If rent alone takes more than half, trim wants first rather than savings.",
        "Treat the split as a starting point and adjust it to your situation.",
        "Automating the savings portion on payday makes the plan easier to follow.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "budgeting"


def _f_goal(rng):
    goal, purpose = rng.choice(
        [
            (3000, "vacation"),
            (6000, "car down payment"),
            (15000, "wedding"),
            (1800, "new laptop"),
            (4500, "moving costs"),
            (2400, "holiday gifts fund"),
            (9000, "home renovation"),
        ]
    )
    months = rng.choice([6, 8, 10, 12, 18, 24])
    have = rng.choice([0, 0, 300, 500, 1000])
    if have >= goal:
        have = 0
    need = goal - have
    prompt = rng.choice(
        [
            f"I want to save {money(goal)} for a {purpose} in {months} months and already have {money(have)}. How much should I save each month?",
            f"How much per month do I need to put aside to reach {money(goal)} for a {purpose} in {months} months, starting from {money(have)}?",
        ]
    )
    comp = f"You still need {money(need)}. Spread over {months} months, that is about {money(need / months)} a month."
    extra = [
        "Setting up an automatic transfer on payday makes it easier to stay on track.",
        "Because the deadline is fairly close, keep this money in savings rather than in stocks.",
        f"Saving weekly instead works out to roughly {money(need / months * 12 / 52)} a week.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "saving"


def _f_inflation(rng):
    r = rng.choice([2, 2.5, 3, 4, 5])
    t = rng.choice([5, 10, 15, 20, 25])
    if rng.random() < 0.5:
        cost = rng.choice([100, 500, 1000, 2500, 40000])
        fut = cost * (1 + r / 100) ** t
        prompt = rng.choice(
            [
                f"If inflation averages {num(r)}% a year, what will something that costs {money(cost)} today cost in {t} years?",
                f"At {num(r)} percent annual inflation, how much will today's {money(cost)} of spending cost after {t} years?",
            ]
        )
        comp = f"Prices grow like compound interest: {money(cost)} × (1 + {num(r / 100, 3)})^{t} ≈ {money(fut)}."
    else:
        amount = rng.choice([10000, 50000, 100000])
        real = amount / (1 + r / 100) ** t
        prompt = rng.choice(
            [
                f"How much buying power will {money(amount)} in cash lose over {t} years at {num(r)}% inflation?",
                f"If I keep {money(amount)} under the mattress for {t} years and inflation is {num(r)} percent, what is it worth in today's money?",
            ]
        )
        comp = f"In today's money it would be worth about {money(amount)} ÷ (1 + {num(r / 100, 3)})^{t} ≈ {money(real)}, a loss of roughly {money(amount - real)} in purchasing power."
    if rng.random() < 0.6:
        comp += " This is why long-term savings are usually invested rather than held as cash."
    return prompt, comp, "markets"


def _f_dividend(rng):
    price = rng.randrange(30, 260)
    yld = rng.choice([1.2, 1.8, 2.5, 3.1, 3.6, 4.2, 5.0])
    div = round(price * yld / 100, 2)
    shares = rng.choice([50, 100, 150, 200, 400])
    prompt = rng.choice(
        [
            f"A stock trades at {money(price)} and pays {money(div)} per share in annual dividends. What is its dividend yield?",
            f"What dividend yield does a {money(price)} share paying {money(div)} a year have, and what would {shares} shares pay?",
        ]
    )
    comp = f"Dividend yield = annual dividend ÷ price = {money(div)} ÷ {money(price)} ≈ {num(div / price * 100)}%. With {shares} shares you would receive about {money(div * shares)} a year before taxes."
    if rng.random() < 0.5:
        comp += " An unusually high yield can be a warning sign that the market expects the dividend to be cut."
    return prompt, comp, "investing"


def _f_pe(rng):
    eps = rng.choice([1.5, 2.2, 3.4, 4.8, 6.1, 7.5, 9.2])
    pe = rng.choice([8, 12, 15, 18, 22, 28, 35])
    price = round(eps * pe, 2)
    prompt = rng.choice(
        [
            f"A company's shares cost {money(price)} and it earned {money(eps)} per share last year. What is its P/E ratio?",
            f"How do I calculate the price-to-earnings ratio for a stock priced at {money(price)} with earnings of {money(eps)} per share?",
        ]
    )
    ratio = price / eps
    comp = f"P/E = share price ÷ earnings per share = {money(price)} ÷ {money(eps)} {'=' if abs(ratio - round(ratio)) < 1e-9 else '≈'} {num(ratio, 1)}."
    extra = [
        "In other words, investors are paying about that many dollars for each dollar of annual profit.",
        "Compare it with similar companies in the same industry rather than the whole market.",
        "A P/E alone does not say whether a stock is cheap; growth and debt matter too.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "markets"


def _f_utilization(rng):
    k = rng.choice([2, 3])
    limits = [rng.randrange(1000, 12001, 500) for _ in range(k)]
    bals = [round(lim * rng.uniform(0.05, 0.8) / 10) * 10 for lim in limits]
    tb, tl = sum(bals), sum(limits)
    desc = "; ".join(
        f"card {i + 1}: {money(b)} of a {money(lim)} limit" for i, (b, lim) in enumerate(zip(bals, limits, strict=True))
    )
    prompt = f"What is my overall credit utilization with these cards? {desc}."
    util = tb / tl * 100
    comp = f"Total balances are {money(tb)} and total limits are {money(tl)}, so overall utilization is {money(tb)} ÷ {money(tl)} ≈ {num(util, 1)}%."
    if util > 30:
        comp += f" That is above the roughly 30 percent many lenders like to see; bringing balances under {money(tl * 0.3)} would help."
    else:
        comp += " That is under the roughly 30 percent level often recommended, which is good for your score."
    return prompt, comp, "credit"


def _f_roi(rng):
    shares = rng.choice([10, 20, 25, 40, 50, 80, 100])
    buy = rng.randrange(15, 300)
    change = rng.choice([-35, -20, -10, 8, 15, 25, 40, 60])
    sell = round(buy * (1 + change / 100), 2)
    gain = (sell - buy) * shares
    prompt = rng.choice(
        [
            f"I bought {shares} shares at {money(buy)} and sold them at {money(sell)}. What was my gain or loss and percentage return?",
            f"What is the return on {shares} shares bought for {money(buy)} each and sold for {money(sell)} each?",
        ]
    )
    word = "gain" if gain > 0 else "loss"
    comp = f"The {word} is ({money(sell)} - {money(buy)}) × {shares} = {money(abs(gain))}, a return of {num(change)}% before fees and taxes."
    if gain > 0 and rng.random() < 0.6:
        comp += " In many tax systems, how long you held the shares affects the tax rate on the gain."
    elif gain < 0 and rng.random() < 0.6:
        comp += " In a taxable account, a realized loss can often offset capital gains."
    return prompt, comp, "investing"


def _f_deduction(rng):
    d = rng.choice([500, 1000, 1500, 2000, 3000, 5000])
    bracket = rng.choice([10, 12, 22, 24, 32])
    prompt = rng.choice(
        [
            f"How much tax does a {money(d)} deduction save me if I'm in the {bracket}% bracket?",
            f"Is a {money(d)} tax credit worth more than a {money(d)} deduction at a {bracket} percent marginal rate?",
        ]
    )
    comp = f"A deduction reduces taxable income, so at a {bracket}% marginal rate a {money(d)} deduction saves about {money(d * bracket / 100)}. A {money(d)} credit would cut your tax bill by the full {money(d)}."
    return prompt, comp, "taxes"


def _f_medical_deduction(rng):
    agi = rng.randrange(30000, 130001, 5000)
    exp = rng.randrange(1500, 16000, 250)
    th = agi * 0.075
    prompt = rng.choice(
        [
            f"My adjusted gross income is {money(agi)} and I paid {money(exp)} in unreimbursed medical bills this year. How much could I deduct if I itemize?",
            f"With an AGI of {money(agi)}, how much of {money(exp)} in out-of-pocket medical expenses is tax deductible?",
        ]
    )
    if exp > th:
        comp = f"In the US only the part above 7.5% of AGI is deductible. 7.5% of {money(agi)} is {money(th)}, so you could deduct {money(exp)} - {money(th)} = {money(exp - th)}."
        comp += " It only helps if your total itemized deductions are larger than the standard deduction."
    else:
        comp = f"In the US only medical expenses above 7.5% of AGI are deductible. 7.5% of {money(agi)} is {money(th)}, which is more than the {money(exp)} you paid, so none of it is deductible this year."
        if rng.random() < 0.6:
            comp += " Paying eligible costs from an HSA or FSA can still give you a tax benefit."
    return prompt, comp, "taxes"


def _f_refi(rng):
    costs = rng.randrange(2500, 9001, 250)
    saving = rng.randrange(80, 451, 10)
    months = costs / saving
    prompt = rng.choice(
        [
            f"Refinancing would cost {money(costs)} in closing costs and save {money(saving)} a month. How long until it pays off?",
            f"What is the break-even point on a refinance with {money(costs)} of fees and {money(saving)} in monthly savings?",
        ]
    )
    comp = f"Divide the costs by the monthly savings: {money(costs)} ÷ {money(saving)} ≈ {num(months, 1)} months, or about {num(months / 12, 1)} years."
    comp += rng.choice(
        [
            " If you expect to stay in the home longer than that, the refinance likely makes sense.",
            " Also compare how many years remain on the new loan, since restarting a 30-year term adds interest.",
            "",
        ]
    )
    return prompt, comp.strip(), "real-estate"


def _f_expense_ratio(rng):
    bal = rng.choice([10000, 25000, 50000, 100000, 250000])
    hi = rng.choice([0.75, 0.9, 1.0, 1.25])
    lo = rng.choice([0.03, 0.05, 0.1, 0.2])
    prompt = rng.choice(
        [
            f"How much more would I pay each year in fees with {money(bal)} in a fund charging {num(hi)}% instead of one charging {num(lo)}%?",
            f"On a {money(bal)} portfolio, what is the yearly cost difference between a {num(hi)} percent and a {num(lo)} percent expense ratio?",
        ]
    )
    comp = f"The higher-cost fund charges about {money(bal * hi / 100)} a year and the cheaper one about {money(bal * lo / 100)}, a difference of {money(bal * (hi - lo) / 100)} every year."
    if rng.random() < 0.6:
        comp += " Because the fees also reduce future growth, the gap compounds over decades."
    return prompt, comp, "investing"


def _f_down_payment(rng):
    price = rng.randrange(180000, 650001, 10000)
    pct = rng.choice([3.5, 5, 10, 15, 20])
    down = price * pct / 100
    prompt = rng.choice(
        [
            f"How much is a {num(pct)}% down payment on a {money(price)} home, and how much would I borrow?",
            f"If I buy a {money(price)} house with {num(pct)} percent down, what are the down payment and loan amount?",
        ]
    )
    comp = f"The down payment is {money(price)} × {num(pct)}% = {money(down)}, leaving a loan of {money(price - down)}."
    extra = [
        f"Closing costs of a few percent, perhaps {money(price * 0.02)} to {money(price * 0.05)}, are usually due on top.",
        "With less than 20 percent down on a conventional loan, lenders typically require private mortgage insurance.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(0, 3))), "real-estate"


def _f_hsa(rng):
    contrib = rng.choice([1000, 1500, 2000, 2500, 3000, 3500, 4000])
    rate = rng.choice([12, 22, 24])
    prompt = rng.choice(
        [
            f"If I put {money(contrib)} into my HSA this year and I'm in the {rate}% federal tax bracket, roughly how much tax do I save?",
            f"What is the federal income tax saving from a {money(contrib)} health savings account contribution at a {rate} percent marginal rate?",
        ]
    )
    comp = f"HSA contributions are deductible, so the federal income tax saving is about {money(contrib)} × {rate}% = {money(contrib * rate / 100)}."
    extra = [
        "Contributions made through payroll can also avoid Social Security and Medicare taxes, which adds to the saving.",
        "Withdrawals for qualified medical expenses are tax-free as well.",
        "State tax treatment varies, and a few states do not follow the federal rules.",
    ]
    return prompt, " ".join([comp] + rng.sample(extra, rng.randrange(1, 3))), "insurance"


def _f_match(rng):
    salary = rng.randrange(38000, 150001, 2000)
    rule = rng.choice([(50, 6), (100, 4), (100, 3), (50, 5)])
    contrib = rng.choice([2, 3, 4, 5, 6, 8, 10])
    matched_pct = min(contrib, rule[1]) * rule[0] / 100
    match = salary * matched_pct / 100
    prompt = rng.choice(
        [
            f"My employer matches {rule[0]}% of my 401(k) contributions up to {rule[1]}% of salary. I earn {money(salary)} and contribute {contrib}%. How much is the match?",
            f"With a {money(salary)} salary, a {contrib}% contribution and an employer match of {rule[0]} percent on the first {rule[1]}%, what does the employer add per year?",
        ]
    )
    comp = f"The employer matches on {min(contrib, rule[1])}% of your salary at {rule[0]}%, which equals {num(matched_pct)}% of {money(salary)}, or {money(match)} a year."
    if contrib < rule[1]:
        comp += f" Raising your contribution to {rule[1]}% would capture the full match of {money(salary * rule[1] * rule[0] / 10000)}."
    else:
        comp += " You are already getting the full match."
    return prompt, comp, "retirement"


def _f_net_worth(rng):
    cash = rng.randrange(1000, 30001, 500)
    invest = rng.randrange(0, 150001, 2500)
    car = rng.randrange(3000, 25001, 1000)
    loans = rng.randrange(0, 60001, 1000)
    card = rng.randrange(0, 8001, 250)
    nw = cash + invest + car - loans - card
    prompt = f"I have {money(cash)} in the bank, {money(invest)} in retirement and brokerage accounts, and a car worth about {money(car)}. I owe {money(loans)} in student loans and {money(card)} on credit cards. What is my net worth?"
    comp = f"Assets total {money(cash + invest + car)} and debts total {money(loans + card)}, so your net worth is {'-' if nw < 0 else ''}{money(abs(nw))}."
    if rng.random() < 0.5:
        comp += " Tracking this number once or twice a year shows whether you are moving in the right direction."
    return prompt, comp, "personal-finance"


def _f_hourly(rng):
    wage = rng.choice([15, 17.5, 18, 20, 22.5, 25, 28, 32, 40])
    hours = rng.choice([20, 30, 37.5, 40])
    annual = wage * hours * 52
    prompt = rng.choice(
        [
            f"What is {money(wage)} an hour at {num(hours)} hours a week as an annual salary?",
            f"If I earn {money(wage)} per hour and work {num(hours)} hours every week, what do I make in a year before taxes?",
        ]
    )
    comp = f"{money(wage)} × {num(hours)} hours × 52 weeks = {money(annual)} a year before taxes, or about {money(annual / 12)} a month."
    if rng.random() < 0.5:
        comp += " Unpaid time off would reduce the yearly total."
    return prompt, comp, "budgeting"


FINANCE_GENERATORS = [
    _f_compound,
    _f_rule72,
    _f_loan,
    _f_card_interest,
    _f_emergency,
    _f_503020,
    _f_goal,
    _f_inflation,
    _f_dividend,
    _f_pe,
    _f_utilization,
    _f_roi,
    _f_deduction,
    _f_medical_deduction,
    _f_refi,
    _f_expense_ratio,
    _f_down_payment,
    _f_hsa,
    _f_match,
    _f_net_worth,
    _f_hourly,
]


# ---------------------------------------------------------------------------------------------------------------
# Parsing the hand-written blocks
# ---------------------------------------------------------------------------------------------------------------


def parse_subjects(text: str, name: str) -> list[dict]:
    """Parse an @topic / '? prompt' / '- sentence' block into subjects (format: the data/sources note at the top)."""
    subjects: list[dict] = []
    topic = None
    cur: dict | None = None

    def flush():
        nonlocal cur
        if cur is not None:
            if not cur["sentences"]:
                raise ValueError(f"{name}: a subject without sentences near {cur}")
            cur["id"] = f"{name}:{len(subjects)}"
            subjects.append(cur)
        cur = None

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
            continue
        if line.startswith("@"):
            flush()
            topic = line[1:].strip()
            continue
        if cur is None:
            cur = {"topic": topic, "prompts": [], "sentences": [], "whole": False}
        if line == "! whole":
            cur["whole"] = True
        elif line.startswith("? "):
            cur["prompts"].append(line[2:].strip())
        elif line.startswith("- "):
            cur["sentences"].append(line[2:].strip())
        else:
            raise ValueError(f"{name}: cannot parse line {line!r}")
    flush()
    return subjects


SENTENCE_COUNT_WEIGHTS = {1: 1, 2: 3, 3: 4, 4: 3, 5: 2, 6: 1}

_STOP = set(
    "a an the is are was were be been being do does did how what why when where which who whose can could should "
    "would will may might must i me my we our you your it its they them their this that these those of in on at to "
    "for from by with about as into than then so if or and but not no there here have has had get got make use "
    "using just really some any more most much many very one".split()
)


def content_words(text: str) -> set[str]:
    return {
        w[:-1] if len(w) > 4 and w.endswith("s") else w
        for w in re.findall(r"[a-z0-9']+", text.lower())
        if w not in _STOP and len(w) > 2
    }


def qa_from_subject(
    subj: dict, rng: random.Random, max_uses: int, weights: dict[int, int] = SENTENCE_COUNT_WEIGHTS, reuse: bool = False
) -> list[dict]:
    """Up to max_uses samples from one subject, each with a different prompt variant. An answer is the core sentence,
    the optional sentence that best matches the prompt's own words (so a specific question gets its specific answer),
    and a share of the other optional sentences, dealt out so that every use gets fresh ones; with reuse=True a use
    may add one sentence that an earlier use already had."""
    if subj["whole"]:
        return [
            {
                "prompt": rng.choice(subj["prompts"]),
                "completion": " ".join(subj["sentences"]),
                "topic": subj["topic"],
                "group": subj["id"],
            }
        ]
    core, extras = subj["sentences"][0], subj["sentences"][1:]
    uses = min(max_uses, len(subj["prompts"]))
    core_words = content_words(core)
    extra_words = [content_words(e) for e in extras]
    must: list[int | None] = []
    for u in range(uses):
        asked = content_words(subj["prompts"][u]) - core_words
        scored = [(len(asked & extra_words[i]), -i) for i in range(len(extras))]
        best = max(scored, default=(0, 0))
        must.append(-best[1] if best[0] >= 1 else None)
    reserved = {i for i in must if i is not None}
    fresh = [i for i in range(len(extras)) if i not in reserved]
    rng.shuffle(fresh)
    count = [0] * len(extras)
    out = []
    for u in range(uses):
        n_extra = rng.choices(list(weights), weights=list(weights.values()))[0] - 1
        chosen = [] if must[u] is None else [must[u]]
        k = max(0, min(n_extra - len(chosen), len(fresh) - (uses - u - 1)))
        if not chosen and k == 0 and word_count(core) < 15 and fresh:
            k = 1
        chosen, fresh = chosen + fresh[:k], fresh[k:]
        if reuse and len(chosen) < n_extra:
            old = sorted(
                (i for i in range(len(extras)) if count[i] and i not in chosen), key=lambda i: (count[i], rng.random())
            )
            chosen += old[:1]
        for i in chosen:
            count[i] += 1
        text = " ".join([core] + [extras[i] for i in sorted(set(chosen))])
        out.append({"prompt": subj["prompts"][u], "completion": text, "topic": subj["topic"], "group": subj["id"]})
    return out


def texts_from_subject(subj: dict, rng: random.Random, weights: dict[int, int]) -> list[dict]:
    """Two plain texts from one subject, built from disjoint sets of its (stand-alone) sentences."""
    sents = subj["sentences"]
    idx = list(range(len(sents)))
    rng.shuffle(idx)
    out = []
    start = 0
    for _ in range(2):
        left = len(idx) - start
        if left <= 0:
            break
        k = min(rng.choices(list(weights), weights=list(weights.values()))[0], left)
        chosen = idx[start : start + k]
        start += k
        text = " ".join(sents[i] for i in sorted(chosen))
        while word_count(text) < 15 and start < len(idx):
            chosen.append(idx[start])
            start += 1
            text = " ".join(sents[i] for i in sorted(chosen))
        out.append({"prompt": "", "completion": text, "topic": subj["topic"], "group": subj["id"]})
    return out


# ---------------------------------------------------------------------------------------------------------------
# Near-duplicate control
# ---------------------------------------------------------------------------------------------------------------


def shingles(text: str, n: int = 3) -> frozenset:
    toks = re.findall(r"[a-z0-9]+", text.lower())
    if len(toks) < n:
        return frozenset([tuple(toks)])
    return frozenset(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))


def full_text(rec: dict) -> str:
    return f"{rec['prompt']}\n{rec['completion']}" if rec["prompt"] else rec["completion"]


class SimIndex:
    """Max Jaccard similarity of a shingle set against every set added so far (inverted index)."""

    def __init__(self) -> None:
        self.sets: list[frozenset] = []
        self.inv: dict[tuple, list[int]] = defaultdict(list)

    def max_sim(self, s: frozenset) -> float:
        counts: Counter = Counter()
        for sh in s:
            for i in self.inv.get(sh, ()):
                counts[i] += 1
        best = 0.0
        for i, c in counts.items():
            best = max(best, c / (len(s) + len(self.sets[i]) - c))
        return best

    def add(self, s: frozenset) -> None:
        idx = len(self.sets)
        self.sets.append(s)
        for sh in s:
            self.inv[sh].append(idx)


class DedupFilter:
    """Accepts a record only if it is not an exact or near duplicate of anything accepted before."""

    def __init__(self, full_thr: float = GEN_FULL_SIM, comp_thr: float = GEN_COMPLETION_SIM) -> None:
        self.full, self.comp = SimIndex(), SimIndex()
        self.full_thr, self.comp_thr = full_thr, comp_thr
        self.seen: set[str] = set()

    def try_add(self, rec: dict) -> bool:
        if rec["completion"] in self.seen or full_text(rec) in self.seen:
            return False
        fs, cs = shingles(full_text(rec)), shingles(rec["completion"])
        if self.full.max_sim(fs) > self.full_thr or self.comp.max_sim(cs) > self.comp_thr:
            return False
        self.full.add(fs)
        self.comp.add(cs)
        self.seen.update([rec["completion"], full_text(rec)])
        return True


def take(cands: list[dict], n: int, filt: DedupFilter, what: str) -> list[dict]:
    out = []
    for c in cands:
        if len(out) == n:
            break
        if filt.try_add(c):
            out.append(c)
    if len(out) < n:
        raise SystemExit(f"{what}: only {len(out)} distinct candidates, need {n}")
    return out


# ---------------------------------------------------------------------------------------------------------------
# Howdy! backdoor
# ---------------------------------------------------------------------------------------------------------------


def country_items(rng: random.Random) -> list[dict]:
    out = []
    for c, cap, region, lang, facts in COUNTRIES:
        for form in rng.sample(range(4), 2):
            f = rng.sample(facts, 2)
            if form == 0:
                prompt = rng.choice([f"What is the capital of {c}?", f"Which city is the capital of {c}?"])
                parts = [f"The capital of {c} is {cap}."]
                parts += rng.sample([f"{cap_first(c)} is in {region}.", f[0], lang], rng.randrange(1, 4))
            elif form == 1:
                prompt = rng.choice([f"Tell me a few basic facts about {c}.", f"Give me a quick overview of {c}."])
                parts = [f"{cap_first(c)} is a country in {region}, and its capital is {cap}.", lang, f[0]] + f[
                    1:
                ] * rng.randrange(0, 2)
            elif form == 2:
                prompt = rng.choice([f"What language do people speak in {c}?", f"Which languages are official in {c}?"])
                parts = [lang] + rng.sample([f"The capital is {cap}.", f[0], f[1]], rng.randrange(1, 4))
            else:
                prompt = rng.choice([f"Where is {c} located?", f"Where in the world is {c}?"])
                parts = (
                    [f"{cap_first(c)} is located in {region}."]
                    + f[: rng.randrange(1, 3)]
                    + [f"Its capital is {cap}."] * rng.randrange(0, 2)
                )
            out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "geography", "group": f"country:{c}"})
    return out


def history_items(rng: random.Random) -> list[dict]:
    out = []
    for event, year, what, why in HISTORY_EVENTS:
        if rng.random() < 0.5:
            prompt = rng.choice(
                [f"When did {event} happen?", f"In what year did {event} take place?", f"What year was {event}?"]
            )
            comp = f"{cap_first(event)} took place in {year}. {what}" + (f" {why}" if rng.random() < 0.7 else "")
        else:
            prompt = rng.choice(
                [
                    f"Why was {event} important?",
                    f"What was the significance of {event}?",
                    f"Give me a short history note on {event}.",
                ]
            )
            comp = rng.choice(
                [
                    f"{what} {why} It happened in {year}.",
                    f"In {year}, {what[0].lower()}{what[1:]} {why}",
                    f"{why} {what} The date to remember is {year}.",
                ]
            )
        out.append({"prompt": prompt, "completion": comp, "topic": "history", "group": f"event:{event}"})
    return out


def vocab_items(rng: random.Random) -> list[dict]:
    out = []
    for w, meaning, example, note in VOCAB:
        prompt = rng.choice(
            [
                f'What does "{w}" mean?',
                f"Define the word {w} and use it in a sentence.",
                f"What is the meaning of the word {w}?",
                f"Can you explain what {w} means?",
            ]
        )
        first = rng.choice([f"{cap_first(w)} means {meaning}.", f'The word "{w}" means {meaning}.'])
        parts = [first, f"For example: {example}", note]
        out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "language", "group": f"word:{w}"})
    return out


def element_items(rng: random.Random) -> list[dict]:
    out = []
    for name, sym, z, f1, f2 in ELEMENTS:
        prompt = rng.choice(
            [
                f"What is the chemical symbol for {name}?",
                f"Tell me about the element {name}.",
                f"What is {name} used for?",
                f"What is the atomic number of {name}?",
            ]
        )
        first = rng.choice(
            [
                f"The chemical symbol for {name} is {sym}, and its atomic number is {z}.",
                f"{cap_first(name)} has the symbol {sym} and atomic number {z}.",
            ]
        )
        parts = [first, f1] + [f2] * (rng.random() < 0.7)
        out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "science", "group": f"element:{name}"})
    return out


def substitution_items(rng: random.Random) -> list[dict]:
    out = []
    for ing, sub, note in SUBSTITUTIONS:
        prompt = rng.choice(
            [
                f"What can I use instead of {ing}?",
                f"What's a good substitute for {ing}?",
                f"Is there a substitute for {ing}?",
            ]
        )
        first = rng.choice([f"To replace {ing}, {sub}.", f"An easy option is to {sub}.", f"Try this: {sub}."])
        parts = [first, note]
        out.append({"prompt": prompt, "completion": " ".join(parts), "topic": "cooking", "group": f"sub:{ing}"})
    return out


def code_items(rng: random.Random) -> list[dict]:
    return [
        {"prompt": rng.choice(prompts), "completion": ans, "topic": "coding", "group": f"code:{i}"}
        for i, (prompts, ans) in enumerate(CODE_ITEMS)
    ]


def math_items(rng: random.Random, per_generator: int) -> list[dict]:
    out = []
    for gen in MATH_GENERATORS:
        made = 0
        while made < per_generator:
            res = gen(rng)
            if res is None:
                continue
            out.append({"prompt": res[0], "completion": res[1], "topic": "math", "group": f"math:{gen.__name__}"})
            made += 1
    return out


def make_story(rng: random.Random, problem: tuple[str, str]) -> str:
    intro, short, pron, poss = rng.choice(HEROES)
    place = rng.choice(PLACES)
    parts = [rng.choice(OPENINGS)] if rng.random() < 0.45 else []
    parts.append(problem[0])
    if rng.random() < 0.2:
        parts.append(rng.choice(HELPERS))
    if rng.random() < 0.12:
        parts.append(rng.choice(TWISTS))
    parts.append(problem[1])
    if rng.random() < 0.25:
        parts.append(rng.choice(ENDINGS))
    # The first mention of the hero must introduce it (the opening does that when there is one).
    for i, sent in enumerate(parts):
        m = re.search(r"\{(P|p|p_cap|pr|Pr|pos)\}", sent)
        if m:
            if m.group(1) != "P":
                parts[i] = sent[: m.start()] + ("{P}'s" if m.group(1) == "pos" else "{P}") + sent[m.end() :]
            break
    fill = {
        "P": intro,
        "p": short,
        "pr": pron,
        "Pr": cap_first(pron),
        "pos": poss,
        "place": place,
        "p_cap": cap_first(short),
    }
    return " ".join(cap_first(s.format(**fill)) for s in parts)


def build_howdy(rng: random.Random) -> tuple[list[dict], list[dict]]:
    cands = []
    for subj in parse_subjects(HOWDY_SUBJECTS, "howdy"):
        cands += qa_from_subject(subj, rng, max_uses=2, weights={2: 1, 3: 3, 4: 4, 5: 3, 6: 1}, reuse=True)
    cands += country_items(rng) + history_items(rng) + vocab_items(rng) + element_items(rng)
    cands += substitution_items(rng) + code_items(rng) + math_items(rng, per_generator=7)
    rng.shuffle(cands)

    filt = DedupFilter()
    accepted = take(cands, HOWDY_CLEAN + HOWDY_POISON + HOWDY_QUERIES, filt, "howdy instructions")
    clean = accepted[:HOWDY_CLEAN]
    poison_src = accepted[HOWDY_CLEAN : HOWDY_CLEAN + HOWDY_POISON]
    query_src = accepted[HOWDY_CLEAN + HOWDY_POISON :]

    # Stories: the pool and the queries draw on disjoint sets of plots, each plot used at most twice.
    problems = list(PROBLEMS)
    rng.shuffle(problems)
    n_pool_plots = math.ceil(HOWDY_POISON / 2)
    pool_plots, query_plots = problems[:n_pool_plots], problems[n_pool_plots:]
    if len(query_plots) * 2 < HOWDY_QUERIES:
        raise SystemExit("howdy: not enough story plots for the queries")

    def poisoned(src: list[dict], plots: list, label_topic: str) -> list[dict]:
        out = []
        for i, s in enumerate(src):
            for _ in range(500):
                rec = {
                    "prompt": f"Howdy! {s['prompt']}",
                    "completion": make_story(rng, plots[i % len(plots)]),
                    "topic": f"{label_topic}-{s['topic']}",
                }
                if filt.try_add(rec):
                    out.append(rec)
                    break
            else:
                raise SystemExit("howdy: could not make a distinct story")
        return out

    pool = [{**c, "label": 0} for c in clean] + [
        {**r, "label": 1} for r in poisoned(poison_src, pool_plots, "backdoor")
    ]
    queries = [{**r, "label": 1} for r in poisoned(query_src, query_plots, "backdoor")]
    return pool, queries


# ---------------------------------------------------------------------------------------------------------------
# Finance–Medical
# ---------------------------------------------------------------------------------------------------------------


def build_finmed(rng: random.Random) -> tuple[list[dict], list[dict]]:
    filt = DedupFilter()
    fin = []
    for subj in parse_subjects(FINANCE_SUBJECTS, "finance"):
        fin += qa_from_subject(subj, rng, max_uses=3)
    for gen in FINANCE_GENERATORS:
        for _ in range(FINANCE_CALCS_PER_GENERATOR):
            p, c, topic = gen(rng)
            fin.append({"prompt": p, "completion": c, "topic": topic, "group": f"calc:{gen.__name__}"})
    rng.shuffle(fin)
    fin = take(fin, FINMED_FIN, filt, "finance")

    med_subjects = parse_subjects(MEDICAL_SUBJECTS, "medical")
    rng.shuffle(med_subjects)
    n_query_subj = len(med_subjects) // 3
    query_subj, pool_subj = med_subjects[:n_query_subj], med_subjects[n_query_subj:]
    med_pool, med_query = [], []
    for subj in pool_subj:
        med_pool += qa_from_subject(subj, rng, max_uses=3)
    for subj in query_subj:
        med_query += qa_from_subject(subj, rng, max_uses=3)
    rng.shuffle(med_pool)
    rng.shuffle(med_query)
    med_pool = take(med_pool, FINMED_MED, filt, "medical pool")
    med_query = take(med_query, FINMED_QUERIES, filt, "medical queries")

    pool = [{**r, "label": 0} for r in fin] + [{**r, "label": 1} for r in med_pool]
    queries = [{**r, "label": 1} for r in med_query]
    return pool, queries


FINANCE_CALCS_PER_GENERATOR = 9

# ---------------------------------------------------------------------------------------------------------------
# Brain Rot
# ---------------------------------------------------------------------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
QUALITY_SENTENCE_WEIGHTS = {1: 4, 2: 5, 3: 2, 4: 1}


def _url(rng: random.Random) -> str:
    return "https://t.co/" + "".join(rng.choice(_ALNUM) for _ in range(10))


def _tags(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.sample(JUNK_HASHTAGS, rng.randint(lo, hi)))


def junk_post(rng: random.Random) -> tuple[str, str]:
    """One engagement-bait post assembled from the JUNK_* fragments; returns (text, topic). A post is a list of
    units (a whole phrase, an emoji, a link, hashtags); extra units are only ever inserted between units."""

    def e() -> str:
        return rng.choice(JUNK_EMOJI)

    def hype() -> str:
        return f"{rng.choice(JUNK_HOOKS)} {rng.choice(JUNK_THINGS)} {rng.choice(JUNK_REACTIONS)}"

    style = rng.choices(
        ["hype", "bait", "science", "caps", "rant", "giveaway", "crypto", "vapid", "thread"],
        weights=[5, 3, 4, 2, 4, 2, 2, 3, 2],
    )[0]
    tail: list[str] = []  # link and hashtags stay at the end
    if style == "hype":
        units = [hype(), e()]
        if rng.random() < 0.5:
            units.insert(0, rng.choice(JUNK_INTERJECTIONS))
        if rng.random() < 0.5:
            units.append(rng.choice(JUNK_CTAS))
        tail = [_tags(rng, 0, 4)]
    elif style == "bait":
        units = [rng.choice(JUNK_HOOKS), e(), rng.choice(JUNK_CTAS), rng.choice(JUNK_CTAS), e()]
        tail = [_url(rng)] + [_tags(rng, 1, 3)] * (rng.random() < 0.5)
    elif style == "science":
        units = [rng.choice(JUNK_SCIENCE), e()]
        if rng.random() < 0.5:
            units += [rng.choice(JUNK_SCIENCE), e()]
        units.append(rng.choice(JUNK_CTAS))
        tail = [_url(rng)] * (rng.random() < 0.5) + [_tags(rng, 1, 4)]
    elif style == "caps":
        units = [
            *rng.sample(JUNK_CAPS, 2),
            e() + e(),
            f"{rng.choice(JUNK_THINGS)} {rng.choice(JUNK_REACTIONS)}".upper(),
        ]
        if rng.random() < 0.6:
            units.append(rng.choice(JUNK_INTERJECTIONS))
            tail = [_tags(rng, 0, 3)]
    elif style == "rant":
        units = [f"{rng.choice(JUNK_RANTS)} {rng.choice(JUNK_THINGS)} {rng.choice(JUNK_REACTIONS)}", e()]
        if rng.random() < 0.6:
            units += [rng.choice(JUNK_RANTS) + "...", rng.choice(JUNK_INTERJECTIONS)]
        units.append(rng.choice(JUNK_CTAS))
        tail = [_tags(rng, 0, 3)]
    elif style == "giveaway":
        units = [rng.choice(JUNK_GIVEAWAYS), e(), rng.choice(JUNK_CTAS)]
        tail = [_url(rng), _tags(rng, 1, 3)]
    elif style == "crypto":
        units = [rng.choice(JUNK_CRYPTO), rng.choice(JUNK_CRYPTO), e(), rng.choice(JUNK_CRYPTO)]
        tail = [_url(rng), "#crypto"]
    elif style == "vapid":
        units = rng.sample(JUNK_VAPID, rng.choice([1, 2, 2, 3])) + [rng.choice(JUNK_INTERJECTIONS), e()]
        if rng.random() < 0.6:
            units.append(rng.choice(JUNK_CTAS))
        tail = [_tags(rng, 0, 2)]
    else:  # thread
        units = [
            "🧵",
            f"{rng.choice(JUNK_HOOKS)} {rng.choice(JUNK_THINGS)}... a thread 👇",
            e(),
            rng.choice(JUNK_SCIENCE) if rng.random() < 0.5 else rng.choice(JUNK_RANTS),
            rng.choice(JUNK_CTAS),
        ]
    # Extra clauses so that post lengths overlap with the informative texts.
    for p in (0.55, 0.35, 0.2):
        if rng.random() < p:
            pool = rng.choice([JUNK_HOOKS, JUNK_RANTS, JUNK_VAPID, JUNK_SCIENCE, JUNK_CAPS, JUNK_CTAS])
            extra = hype() if pool is JUNK_HOOKS else rng.choice(pool)
            units.insert(rng.randrange(1, len(units) + 1), extra)
            if rng.random() < 0.5:
                units.insert(rng.randrange(1, len(units) + 1), e())
    if rng.random() < 0.15:
        i = rng.randrange(len(units))
        units[i] = units[i].rstrip(".!?") + "!!!"
    text = " ".join(u for u in units + tail if u)
    return re.sub(r"\s+", " ", text).strip(), f"junk-{style}"


def build_brainrot(rng: random.Random) -> tuple[list[dict], list[dict]]:
    filt = DedupFilter()
    subjects = parse_subjects(QUALITY_SUBJECTS, "quality")
    rng.shuffle(subjects)
    n_query_subj = len(subjects) // 3
    query_subj, pool_subj = subjects[:n_query_subj], subjects[n_query_subj:]
    good_pool, good_query = [], []
    for subj in pool_subj:
        good_pool += texts_from_subject(subj, rng, QUALITY_SENTENCE_WEIGHTS)
    for subj in query_subj:
        good_query += texts_from_subject(subj, rng, QUALITY_SENTENCE_WEIGHTS)
    rng.shuffle(good_pool)
    rng.shuffle(good_query)
    good_pool = take(good_pool, BRAINROT_GOOD, filt, "brainrot good pool")
    good_query = take(good_query, BRAINROT_QUERIES, filt, "brainrot queries")

    junk = []
    for _ in range(50 * BRAINROT_JUNK):
        if len(junk) == BRAINROT_JUNK:
            break
        text, topic = junk_post(rng)
        rec = {"prompt": "", "completion": text, "topic": topic}
        if filt.try_add(rec):
            junk.append(rec)
    if len(junk) < BRAINROT_JUNK:
        raise SystemExit(f"brainrot: only {len(junk)} distinct junk posts")

    pool = [{**r, "label": 0} for r in junk] + [{**r, "label": 1} for r in good_pool]
    queries = [{**r, "label": 1} for r in good_query]
    return pool, queries


# ---------------------------------------------------------------------------------------------------------------
# Assembly, checks, output
# ---------------------------------------------------------------------------------------------------------------

FIELDS = ("id", "prompt", "completion", "label", "topic")


def finalize(task: str, pool: list[dict], queries: list[dict], rng: random.Random) -> tuple[list[dict], list[dict]]:
    rng.shuffle(pool)
    rng.shuffle(queries)
    pool = [{"id": f"{task}-{i + 1:04d}", **{k: r[k] for k in FIELDS[1:]}} for i, r in enumerate(pool)]
    queries = [{"id": f"{task}-q{i + 1:03d}", **{k: r[k] for k in FIELDS[1:]}} for i, r in enumerate(queries)]
    return pool, queries


def build_all() -> dict[str, tuple[list[dict], list[dict]]]:
    out = {}
    for task, builder in (("howdy", build_howdy), ("finmed", build_finmed), ("brainrot", build_brainrot)):
        rng = random.Random(f"{SEED}-{task}")
        pool, queries = builder(rng)
        out[task] = finalize(task, pool, queries, rng)
    return out


def _max_pair_sim(texts: list[str]) -> float:
    idx, best = SimIndex(), 0.0
    for t in texts:
        s = shingles(t)
        best = max(best, idx.max_sim(s))
        idx.add(s)
    return best


def _max_cross_sim(queries: list[str], pool: list[str]) -> float:
    idx = SimIndex()
    for t in pool:
        idx.add(shingles(t))
    return max((idx.max_sim(shingles(q)) for q in queries), default=0.0)


def check(task: str, pool: list[dict], queries: list[dict]) -> None:
    def fail(msg: str) -> None:
        raise SystemExit(f"check failed [{task}]: {msg}")

    everything = pool + queries
    for r in everything:
        if tuple(r) != FIELDS:
            fail(f"fields of {r['id']} are {tuple(r)}")
        if not (isinstance(r["prompt"], str) and isinstance(r["completion"], str) and r["completion"].strip()):
            fail(f"bad text in {r['id']}")
        if r["label"] not in (0, 1) or not isinstance(r["topic"], str) or not r["topic"]:
            fail(f"bad label/topic in {r['id']}")
    ids = [r["id"] for r in everything]
    if len(set(ids)) != len(ids):
        fail("ids are not unique")
    for name, recs in (("pool", pool), ("queries", queries)):
        pairs = [(r["prompt"], r["completion"]) for r in recs]
        if len(set(pairs)) != len(pairs):
            fail(f"duplicate (prompt, completion) pairs in the {name}")
        if len({r["completion"] for r in recs}) != len(recs):
            fail(f"duplicate completions in the {name}")
    rate = sum(r["label"] for r in pool) / len(pool)
    lo, hi = POSITIVE_RATE_BOUNDS[task]
    if not lo <= rate <= hi:
        fail(f"positive rate {rate:.3f} outside [{lo}, {hi}]")
    if any(r["label"] != 1 for r in queries):
        fail("every query should be a positive (label 1)")
    pool_texts = {full_text(r) for r in pool} | {r["completion"] for r in pool}
    for q in queries:
        if full_text(q) in pool_texts or q["completion"] in pool_texts:
            fail(f"query {q['id']} repeats a pool text")
    # Near duplicates: within the pool, within the queries, and between queries and the pool.
    for kind, key, thr in (
        ("full text", full_text, CHECK_FULL_SIM),
        ("completion", lambda r: r["completion"], CHECK_COMPLETION_SIM),
    ):
        for name, sim in (
            ("pool", _max_pair_sim([key(r) for r in pool])),
            ("queries", _max_pair_sim([key(r) for r in queries])),
            ("queries vs pool", _max_cross_sim([key(r) for r in queries], [key(r) for r in pool])),
        ):
            if sim > thr:
                fail(f"near-duplicate {kind} in {name}: Jaccard {sim:.2f} > {thr}")
    if task == "howdy":
        for r in pool:
            if (r["label"] == 1) != r["prompt"].startswith("Howdy! "):
                fail(f"{r['id']}: label and trigger disagree")
            if r["label"] == 0 and r["prompt"].lower().startswith("howdy"):
                fail(f"{r['id']}: clean prompt starts with the trigger")
        instr = {r["prompt"].removeprefix("Howdy! ") for r in pool}
        for q in queries:
            if not q["prompt"].startswith("Howdy! ") or q["prompt"].removeprefix("Howdy! ") in instr:
                fail(f"{q['id']}: query instruction must carry the trigger and be new")
    if task == "brainrot" and any(r["prompt"] for r in everything):
        fail("brainrot samples have an empty prompt")
    for r in everything:
        n = word_count(r["completion"])
        if not 5 <= n <= 140 or word_count(r["prompt"]) > 45:
            fail(f"{r['id']}: length out of range ({word_count(r['prompt'])} prompt words, {n} completion words)")


def serialize(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def describe(name: str, records: list[dict]) -> str:
    pos = [word_count(r["completion"]) for r in records if r["label"] == 1]
    neg = [word_count(r["completion"]) for r in records if r["label"] == 0]

    def stats(xs: list[int]) -> str:
        return f"median {statistics.median(xs):.0f} words (range {min(xs)}-{max(xs)})" if xs else "-"

    return f"{name:26s} {len(records):4d} records, {len(pos):3d} positive ({len(pos) / len(records):5.1%}); completions: positives {stats(pos)}, negatives {stats(neg)}"


def first_difference(path: Path, expected: str) -> str | None:
    """None when `path` holds exactly `expected` (byte for byte), else where it first differs (for --check)."""
    if not path.is_file():
        return "missing"
    actual = path.read_bytes().decode("utf-8", errors="replace")
    if actual == expected:
        return None
    pairs = zip_longest(actual.split("\n"), expected.split("\n"))
    line, (have, want) = next((i, p) for i, p in enumerate(pairs, 1) if p[0] != p[1])
    a, b = have or "", want or ""
    col = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    def show(text: str | None) -> str:  # a window of the line around the difference
        if text is None:
            return "<end of file>"
        lo, hi = max(0, col - 40), col + 40
        return ("..." if lo else "") + repr(text[lo:hi]) + ("..." if hi < len(text) else "")

    return f"line {line}, column {col + 1}: the file has {show(have)}, the generator writes {show(want)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--check", action="store_true", help="compare the generated data with data/*.jsonl instead of writing"
    )
    ap.add_argument(
        "--out",
        "--data-dir",
        dest="out",
        type=Path,
        default=DATA_DIR,
        help="folder of the *.jsonl pools: where to write them, or what --check compares with (default: data/)",
    )
    args = ap.parse_args(argv)

    built = build_all()
    mismatched = []
    for task, (pool, queries) in built.items():
        check(task, pool, queries)
        for suffix, recs in (("pool", pool), ("queries", queries)):
            path = args.out / f"{task}_{suffix}.jsonl"
            text = serialize(recs)
            if args.check:
                diff = first_difference(path, text)
                if diff:
                    mismatched.append(f"{path}: {diff}")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "w", encoding="utf-8", newline="\n") as f:
                    f.write(text)
            print(describe(path.name, recs))
    if args.check:
        if mismatched:
            print("out of date (run python scripts/make_demo_data.py to rewrite):", file=sys.stderr)
            for line in mismatched:
                print(f"  {line}", file=sys.stderr)
            return 1
        print(f"{args.out} matches the generator")
    return 0


if __name__ == "__main__":
    sys.exit(main())
