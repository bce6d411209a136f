"""Per-query channel weights without labels: the gradient view when the behaviour test finds what taught the answer,
else lean on the gradient channels when the query surprises the model.

First the behaviour test (`rise_core.behaviour`, `BehaviourEvidence`): when the gradient view's top rows share a span
the query holds and the representation view's top rows lack (a trigger), the query is scored by the gradient view
(RH + GH), whatever its loss: a backdoor whose payload is fluent text does not surprise the model. Evidence:
studies/behaviour_rule.py, docs/EVALUATION.md, "Backdoors the loss cannot see". Otherwise the loss gate:

Which RISE channel finds the right training rows depends on the kind of question (docs/EVALUATION.md): the
representation (HS) wins topical questions, whose answers read like the pool, while the gradient channels (RH, GH)
win behaviours the model had to learn from a few specific rows (a backdoor's frame, a refusal), which surprise it.
The rule measures that surprise directly, from what every index already stores: the query's mean next-token loss
minus the pool's median loss, in nats per token, over the same counted positions. A logistic gate turns it into

    g = sigmoid(SLOPE * (surprise - MIDPOINT));  lambda_rh = 1.4 g,  lambda_gh = g,  lambda_hs = 1 - g,

so a query the model finds as ordinary as the pool is scored by HS, and one it finds surprising by RH + GH.

Evidence (studies/query_channels.py; auPRC@10 of the embedded SmolLM2-135M, prospective): SLOPE and MIDPOINT
were chosen among 6 midpoints x 4 slopes x 2 HS weights on the tune sets only (the bundled pools and the first halves
of dev-finmed, dev-brainrot, dev-sentiment), with the label-free alternatives tried beside it (top-k sharpness, the
coherence of each channel's top rows, cross-channel agreement, rank fusion), which did no better than the fixed
default there. The report sets no choice saw are in docs/EVALUATION.md, "One ranking for every kind of question".
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .config import PRESET_SCORING, AppliedScoring, ScoreOptions, index_preset_line, preset_scoring
from .errors import InputDataError

SLOPE = 4.0
"""per nat per token: how sharply the gate turns (chosen on the tune sets)."""
MIDPOINT = 0.5
"""nats per token above the pool's median loss at which the gate weighs both sides equally (chosen on the tune sets)."""
GRADIENT_WEIGHTS = {"rh": 1.4, "gh": 1.0}
"""RH : GH inside the gradient side: the fixed default's ratio (chosen on the tune sets, docs/EVALUATION.md)."""
BEHAVIOUR_K = 10
"""how many top rows of each view the behaviour test reads."""
BEHAVIOUR_EVIDENCE = 2.0
"""-log10 of the span's corrected p-value the behaviour test needs (chosen on the tune sets, studies/behaviour_rule.py)."""
BEHAVIOUR_MIN_IN_TOP = 3
"""how many of the gradient view's top rows must hold the span (chosen with BEHAVIOUR_EVIDENCE)."""
BEHAVIOUR_MAX_IN_REPRESENTATION = 3
"""at most this many of the representation view's top rows may hold it (chosen with BEHAVIOUR_EVIDENCE)."""
BEHAVIOUR_SPANS = 2
"""how many distinct spans of the gradient view the test tries, most telling first, when the best does not fire (a
span inside one tried, or holding it, is not distinct; the first that fires is the finding). Chosen with the span
lift on the tune sets among 1, 2, 3 and 5 distinct spans and the 3 or 10 most telling spans: every one above 1 ties
(0.916 against 0.910) and 2 reads the fewest (studies/behaviour_rule.py; docs/EVALUATION.md, "The span lift")."""
BEHAVIOUR_DEEPER_K = 30
"""where the test on the views' top BEHAVIOUR_K rows lifts nothing, it runs on their top this many, and its finding is
taken only where it lifts a rare span of the prompt (`behaviour.behaviour_test_for`): a trigger that only 1 or 2 of the
top 10 rows hold. Registered before the six fresh sets it was tested on (studies/behaviour_rule.py, DEEPER_READ;
docs/EVALUATION.md, "The deeper read")."""
FEEDBACK_START_FLOOR = 0.1
"""the share of its fixed weight each channel keeps where the marks start from the loss gate's mix
(`feedback_start`). Starting from the shown weights rather than the preset's fixed ones lifts the tune mean after 1, 3
and 5 marks from 0.954, 0.977, 0.990 to 0.970, 0.986, 0.995 (the tweet-quality sets, where the gate leans on HS and
the fixed weights' gradient side misled the first marks); floors 0 and 0.1 tie (0.983 over 1, 3, 5 marks; 0.25 and
0.5 below), 0.1 keeps every channel within the marks' reach (`studies/behaviour_rule.py`; docs/EVALUATION.md,
"Feedback: where the marks start")."""
SPAN_LIFT = 1.5
"""when the behaviour test fires (or both views share its span: `BehaviourEvidence.lifts`), the rows holding its span
(in its field) are lifted by this many standard deviations of the query's scores over the pool (`rise_core.span_lift`).
Chosen among 0.5, 1, 1.5 and 2 on the tune sets (studies/behaviour_rule.py; docs/EVALUATION.md, "The span lift"): the
best tune mean, with 1 and 2 within 0.001."""
PROMPT_SPAN_LIFT = 10.0
"""the lift (standard deviations of the query's scores) for a span of the prompt, where a backdoor's trigger sits: its
rows come before the rows that are only near the query (on dev-story each query's own story is a clean row of the pool,
which the gradient view ranks first; the trigger's rows rank after it under SPAN_LIFT). Chosen among 1.5, 2, 3, 5, 10,
20 and unbounded on the tune sets: 10, 20 and unbounded tie at the best tune mean (0.933 against 0.931 at 5 and 0.921
at 1.5) and 10 is the least (studies/behaviour_rule.py; docs/EVALUATION.md, "The trigger's field")."""
PROMPT_SPAN_MAX_SHARE = 0.2
"""a span of the prompt is taken for a trigger (tried first, lifted by PROMPT_SPAN_LIFT) only when at most this share of
the pool's rows hold it: a trigger is rare (4% to 9% of the tune pools' rows), an instruction's common words are not
("the", in a third of the Howdy! pool's prompts, fired on a retrospective Howdy! query without it). Among 0.1, 0.2,
0.3 and no bound, the bounds tie on every tune set and beat no bound on retrospective Howdy!; 0.2 is the middle one,
twice the Howdy! trigger's share (studies/behaviour_rule.py; docs/EVALUATION.md, "The trigger's field")."""


def evidence_strength(p_adjusted: float) -> float:
    """-log10 of a corrected p-value (floored at 1e-300): the scale BEHAVIOUR_EVIDENCE is on."""
    return -math.log10(max(p_adjusted, 1e-300))


def _trigger_like(where: str, pool_fraction: float) -> bool:
    return where == "prompt" and pool_fraction <= PROMPT_SPAN_MAX_SHARE


def _lift_spreads(where: str, pool_fraction: float) -> float:
    return PROMPT_SPAN_LIFT if _trigger_like(where, pool_fraction) else SPAN_LIFT


@dataclass(frozen=True)
class LiftedSpan:
    """The span whose rows the behaviour test's finding lifts: its text, its field and the lift in standard deviations
    of the query's scores."""

    span: str
    where: str
    spreads: float


@dataclass(frozen=True)
class BehaviourEvidence:
    """The behaviour test's finding for one query: the span the gradient view's top rows share most tellingly
    (`rise_core.shared_spans`: over-represented against the pool), and how many of the representation view's top rows
    hold it. It fires when the span is telling, held by several gradient hits and by few representation hits: the
    gradient view then finds rows that taught something specific (a trigger and what follows it) that the rows
    reading like the query lack, which is what a backdoor, even one whose payload is fluent text, looks like."""

    span: str
    where: str
    in_top: int
    top_k: int
    pool_fraction: float
    p_adjusted: float
    in_representation: int
    in_query: bool = True
    """whether the query itself holds the span (unknown, taken as True, when the query's text is not at hand)."""
    rival_span: str = ""
    """the span the representation view's top rows share most tellingly (its own test; "" when they share none)."""
    rival_in_top: int = 0
    rival_p_adjusted: float = 1.0
    rival_in_query: bool = False
    rival_where: str = ""
    """the rival span's field ("" when unknown: then its rows are not lifted)."""
    rival_pool_fraction: float = 1.0
    corrected_over: str = "hits"
    """the family p_adjusted is corrected over: "hits", every span of the top rows, or "prompt", the query prompt's own
    spans (`behaviour.PROMPT_FAMILY`)."""
    loss_excess: float = float("nan")
    """the mean loss of the pool rows holding the span (in its field) minus the pool's median loss, nats per token
    (`behaviour.holders_excess`); nan where not read: it is read only where the rival would win over a rare span of
    the prompt (`behaviour.weigh_by_loss`)."""
    rival_loss_excess: float = float("nan")
    """the same for the rival's span (nan where not read)."""
    loss_model: str = "the model"
    """whose losses the two excesses are: "the model", or "the base model" on a fine-tune's index, where the arbiter
    reads the adapter's base model (`behaviour.learned_reading`)."""

    @property
    def rival_count_wins(self) -> bool:
        """Whether the representation view found the stronger shared span by count: telling (the same p-value bar),
        held by the query, and by more of its top rows than the gradient view's span is by its own."""
        return (bool(self.rival_span) and self.rival_in_query and self.rival_in_top > self.in_top
                and evidence_strength(self.rival_p_adjusted) >= BEHAVIOUR_EVIDENCE)

    @property
    def loss_overrules_rival(self) -> bool:
        """Whether the pool's losses set the rival aside: the gradient view's span is a rare span of the prompt
        (`in_prompt`, a trigger's place) whose holders surprise the model (`loss_excess` above 0) more than the
        rival's holders do. A poisoned row's completion is not what its prompt asks for, even a fluent story, while a
        task word's rows read like the pool. Chosen on the tune sets and put to six fresh ones first
        (studies/behaviour_rule.py, PROMPT_ARBITER; docs/EVALUATION.md, "The arbiter on the prompt's span")."""
        return (self.in_prompt and self.loss_excess > 0 and self.loss_excess > self.rival_loss_excess)

    @property
    def rival_wins(self) -> bool:
        """Whether the representation view's own span leads: it wins by count (`rival_count_wins`) and the pool's
        losses do not overrule it (`loss_overrules_rival`). Then the rows that read like the query are the ones that
        share what it holds (a model's own answers, retrospectively: its gradient view matches the instruction's
        wording instead), and the test does not fire (studies/behaviour_rule.py, docs/EVALUATION.md, "The
        representation view's own span")."""
        return self.rival_count_wins and not self.loss_overrules_rival

    @property
    def strength(self) -> float:
        """-log10 of the corrected p-value."""
        return evidence_strength(self.p_adjusted)

    @property
    def telling(self) -> bool:
        """Whether the span passes the test's bar: telling (corrected p-value), held by at least BEHAVIOUR_MIN_IN_TOP
        of the gradient view's top rows and by the query."""
        return self.strength >= BEHAVIOUR_EVIDENCE and self.in_top >= BEHAVIOUR_MIN_IN_TOP and self.in_query

    @property
    def fires(self) -> bool:
        """Whether the test fires: a telling span that the representation view's top rows lack (at most
        BEHAVIOUR_MAX_IN_REPRESENTATION of them hold it) and whose rival does not win. The query is then scored by
        the gradient view."""
        return self.telling and self.in_representation <= BEHAVIOUR_MAX_IN_REPRESENTATION and not self.rival_wins

    @property
    def shared(self) -> bool:
        """Whether both views' top rows share the telling span (more than BEHAVIOUR_MAX_IN_REPRESENTATION of the
        representation view's hold it): the test does not fire, since the views agree and the loss gate keeps its
        mix, but the span is what the query and the rows nearest it in both views hold, so its rows are lifted too
        (chosen on the tune sets: studies/behaviour_rule.py; docs/EVALUATION.md, "The shared span")."""
        return self.telling and self.in_representation > BEHAVIOUR_MAX_IN_REPRESENTATION

    @property
    def in_prompt(self) -> bool:
        """Whether the span is one of the prompt held by at most PROMPT_SPAN_MAX_SHARE of the pool's rows: where a
        backdoor's trigger sits, and as rare as one."""
        return _trigger_like(self.where, self.pool_fraction)

    @property
    def lifted(self) -> LiftedSpan | None:
        """The span whose rows are lifted (`rise_core.span_lift`), None when none is: the test's own span where it
        fired or both views share it; else the rival's, where the rival wins (the representation view leads, and the
        span its top rows share with the query is what they hold: chosen on the tune sets, studies/behaviour_rule.py;
        docs/EVALUATION.md, "The rival's span")."""
        if self.fires or self.shared:
            return LiftedSpan(self.span, self.where, _lift_spreads(self.where, self.pool_fraction))
        if self.rival_wins and self.rival_where:
            return LiftedSpan(self.rival_span, self.rival_where,
                              _lift_spreads(self.rival_where, self.rival_pool_fraction))
        return None

    @property
    def lifts_prompt_span(self) -> bool:
        """Whether the lifted span (`lifted`) is a rare span of the prompt, a trigger's place."""
        if self.fires or self.shared:
            return self.in_prompt
        return self.rival_wins and bool(self.rival_where) and _trigger_like(self.rival_where,
                                                                            self.rival_pool_fraction)

    @property
    def lift_spreads(self) -> float:
        """How many standard deviations of the query's scores the lifted span's rows are lifted by (`lifted`; the
        test's own span's lift where none is): PROMPT_SPAN_LIFT for a rare span of the prompt (a trigger's place),
        else SPAN_LIFT."""
        found = self.lifted
        return found.spreads if found is not None else _lift_spreads(self.where, self.pool_fraction)

    @property
    def lifts(self) -> bool:
        """Whether a span's rows are lifted (`lifted`): the test fired, both views share its span, or the rival's
        span wins."""
        return self.lifted is not None

    @property
    def line(self) -> str:
        rival = (f"; the representation view's top {self.top_k} share \"{self.rival_span}\" ({self.rival_in_top} of "
                 "them), more, so it leads" if self.rival_wins else "")
        if self.rival_count_wins and self.loss_overrules_rival:
            rival = (f"; the representation view's top {self.top_k} share \"{self.rival_span}\" more ({self.rival_in_top}"
                     f" of them), but the rows holding \"{self.span}\" surprise {self.loss_model} more "
                     f"({self.loss_excess:+.2f} nats per token above the pool's median loss, against "
                     f"{self.rival_loss_excess:+.2f}), so it "
                     "stands")
        family = " over the query prompt's spans" if self.corrected_over == "prompt" else ""
        return (f"the gradient view's top {self.top_k} share \"{self.span}\" ({self.where}; {self.in_top} of them, "
                f"{self.pool_fraction:.1%} of the pool, corrected p {self.p_adjusted:.1g}{family}) and the "
                f"representation view's top {self.top_k} hold it {self.in_representation} times{rival}")

    def as_dict(self) -> dict:
        lifted = self.lifted
        return {**dataclasses.asdict(self), "fires": self.fires, "shared": self.shared,
                "lifted_span": None if lifted is None else lifted.span}


BehaviourTest = Callable[[ScoreOptions], "BehaviourEvidence | None"]
"""gradient-view options -> the behaviour test's evidence for the query at hand (None: no shared span)."""


@dataclass(frozen=True)
class ChannelChoice:
    """What the per-query rule decided for one query (or query set), and why, for the pages and the CLI."""

    surprise: float
    """query mean loss minus the pool's median loss (nats per token); nan when either is unknown."""
    gate: float
    """weight of the gradient side (RH + GH), in [0, 1]; HS gets 1 - gate."""
    options: ScoreOptions
    """the fixed weights this query is scored with."""
    query_loss: float = float("nan")
    pool_loss: float = float("nan")
    behaviour: BehaviourEvidence | None = None
    """the behaviour test's finding (None: not run, or nothing shared)."""

    @property
    def leaning(self) -> str:
        """'gradient (RH + GH)', 'representation (HS)' or 'both'."""
        if self.gate >= 2 / 3:
            return "gradient (RH + GH)"
        if self.gate <= 1 / 3:
            return "representation (HS)"
        return "both"

    @property
    def reason(self) -> str:
        """One line: which channels, and what chose them."""
        if self.behaviour is not None and self.behaviour.fires:
            w = self.options
            return (f"leaned on gradient (RH + GH), what taught a behaviour: {self.behaviour.line}; weights "
                    f"{_weights(w)}; the examples holding "
                    f"\"{self.behaviour.span}\" are lifted by {self.behaviour.lift_spreads:g} standard deviations of "
                    "the scores (the span column)")
        if math.isnan(self.surprise):
            return "fixed weights: the query's or the pool's loss is unknown, so the per-query rule could not run"
        w = self.options
        feel = "surprises the model more than" if self.surprise > MIDPOINT else "reads like"
        found = self.behaviour
        if found is not None and found.shared:
            vetoed = (f" (the behaviour test did not fire, both views share the span: {found.line}; the examples "
                      f"holding \"{found.span}\" are lifted by {found.lift_spreads:g} standard deviations of the "
                      "scores, the span column)")
        elif found is not None and found.rival_wins:
            lifted = found.lifted
            held = (f"; the examples holding \"{lifted.span}\" are lifted by {lifted.spreads:g} standard deviations "
                    "of the scores, the span column" if lifted is not None else "")
            vetoed = f" (the behaviour test did not fire: {found.line}{held})"
        else:
            vetoed = ""
        return (f"leaned on {self.leaning}: the query's loss is {self.query_loss:.2f} nats/token against the pool's "
                f"median {self.pool_loss:.2f} (surprise {self.surprise:+.2f}), so it {feel} the pool; weights "
                f"{_weights(w)}{vetoed}")

    def as_dict(self) -> dict:
        return {"surprise": self.surprise, "gate": self.gate, "leaning": self.leaning, "query_loss": self.query_loss,
                "pool_loss": self.pool_loss, "lambda_rh": self.options.lambda_rh,
                "lambda_gh": self.options.lambda_gh, "lambda_hs": self.options.lambda_hs, "reason": self.reason,
                "behaviour": self.behaviour.as_dict() if self.behaviour is not None else None}


def _weights(options: ScoreOptions) -> str:
    """'RH 1.4, GH 1, HS 0.00113': each channel's weight to 3 significant digits (a gate near 0 leaves RH and GH
    small but not zero, which two decimals printed as 0.00)."""
    return f"RH {options.lambda_rh:.3g}, GH {options.lambda_gh:.3g}, HS {options.lambda_hs:.3g}"


def gate(surprise: float, slope: float = SLOPE, midpoint: float = MIDPOINT) -> float:
    """The gradient side's weight for a surprise (nats per token above the pool's median loss): sigmoid(slope
    (surprise - midpoint)); the studies sweep `slope` and `midpoint`."""
    x = slope * (float(surprise) - midpoint)
    return 1.0 / (1.0 + math.exp(-x)) if x >= -700 else 0.0


def pool_loss(losses: torch.Tensor | None) -> float:
    """THE pool's reference loss, for in-memory features and for an index (`RiseIndex.reference_loss` reads its stored
    losses and calls this): the median, in float64, of the samples' float32 mean losses (samples with no counted
    token skipped; an even count takes the mean of the middle two). Kept over DuckDB's median of the FLOAT column,
    which rounds that mean to float32, because the in-memory path has no SQL engine and one function cannot drift."""
    if losses is None:
        return float("nan")
    x = torch.as_tensor(losses, dtype=torch.float64)
    x = x[torch.isfinite(x)]
    return float(np.median(x.numpy())) if x.numel() else float("nan")


def gradient_view(options: ScoreOptions) -> ScoreOptions:
    """The gradient view of `options`: RH + GH at GRADIENT_WEIGHTS, no HS, fixed (the paper's RISE)."""
    return dataclasses.replace(options, weighting="fixed", lambda_rh=GRADIENT_WEIGHTS["rh"],
                               lambda_gh=GRADIENT_WEIGHTS["gh"], lambda_hs=0.0)


def representation_view(options: ScoreOptions) -> ScoreOptions:
    """The representation view of `options`: HS alone, fixed."""
    return dataclasses.replace(options, weighting="fixed", lambda_rh=0.0, lambda_gh=0.0, lambda_hs=1.0)


def feedback_start(asked: ScoreOptions, choice: ChannelChoice, floor: float = FEEDBACK_START_FLOOR) -> ScoreOptions:
    """Where relevance feedback starts for options `asked` and the per-query `choice` made for them: the shown
    ranking's own weights (the gradient view when the behaviour test fired; else, under weighting='auto', the loss
    gate's mix with each channel at least `floor` of `asked`'s fixed weight, so the marks can bring back a view the
    gate all but left out; floor 1: the fixed weights)."""
    if asked.weighting != "auto" or (choice.behaviour is not None and choice.behaviour.fires):
        return choice.options
    shown, fixed = choice.options, dataclasses.replace(asked, weighting="fixed")
    return dataclasses.replace(shown, **{f"lambda_{c}": max(getattr(shown, f"lambda_{c}"),
                                                            floor * getattr(fixed, f"lambda_{c}"))
                                         for c in ("rh", "gh", "hs")})


def feedback_turn(asked: ScoreOptions, choice: ChannelChoice) -> ScoreOptions | None:
    """The view relevance feedback turns to when the first marks all miss (`feedback.FeedbackConfig.turn_after`), for
    options `asked` and the per-query `choice` made for them: under weighting='auto' where the loss gate chose, the
    view the gate weighed less (the gradient view where HS held the greater share, else the representation view).
    None where there is no other view to turn to: fixed weights, a behaviour test that fired (its finding, not the
    gate, chose the gradient view), no gate, or no HS channel."""
    if asked.weighting != "auto" or (choice.behaviour is not None and choice.behaviour.fires) \
            or not math.isfinite(choice.gate):
        return None
    if choice.gate < 0.5:
        return gradient_view(asked)
    return representation_view(asked) if choice.options.lambda_hs > 0 else None


def choose(options: ScoreOptions, query_loss: float, reference_loss: float, has_hs: bool = True,
           behaviour: BehaviourEvidence | None = None) -> ChannelChoice:
    """The per-query weights for `options` with weighting='auto' (other options are returned as they are): the
    gradient view when the behaviour test fires, else the loss gate."""
    if options.weighting != "auto":
        return ChannelChoice(float("nan"), float("nan"), options)
    fixed = dataclasses.replace(options, weighting="fixed")
    q, p = float(query_loss), float(reference_loss)
    surprise = q - p if math.isfinite(q) and math.isfinite(p) else float("nan")
    if behaviour is not None and behaviour.fires:
        return ChannelChoice(surprise, 1.0, gradient_view(options), q, p, behaviour)
    if not (math.isfinite(q) and math.isfinite(p)):
        return ChannelChoice(float("nan"), float("nan"), fixed, q, p)
    surprise = q - p
    g = gate(surprise) if has_hs else 1.0  # without HS the gradient side is all there is
    chosen = dataclasses.replace(fixed, lambda_rh=GRADIENT_WEIGHTS["rh"] * g, lambda_gh=GRADIENT_WEIGHTS["gh"] * g,
                                 lambda_hs=(1.0 - g) if has_hs else 0.0)
    if not chosen.weighted:  # g underflowed to exactly 0 or 1 on a channel-poor index: keep something to rank with
        chosen = dataclasses.replace(chosen, lambda_rh=GRADIENT_WEIGHTS["rh"], lambda_gh=GRADIENT_WEIGHTS["gh"])
    return ChannelChoice(surprise, g, chosen, q, p, behaviour)


def query_loss(losses: torch.Tensor | None) -> float:
    """A query set's loss: the mean of its queries' mean losses (nan when unknown)."""
    if losses is None or len(losses) == 0:
        return float("nan")
    x = torch.as_tensor(losses, dtype=torch.float64)
    x = x[torch.isfinite(x)]
    if not x.numel():
        raise InputDataError("no query has a counted token to measure its loss on")
    return float(x.mean())


@dataclass(frozen=True)
class Weighting:
    """How one query's (or query set's) scoring was resolved (`resolve`): the options asked for as applied to the
    channels present, the weights then chosen for the query, and the line saying the index's preset was used."""

    applied: AppliedScoring
    """the options asked for (given, or the index's preset) as applied to the channels present (`notes`)."""
    choice: ChannelChoice
    """the fixed weights scored (the per-query rule's when weighting='auto') and why."""
    preset_note: str = ""
    """the line saying the index's build preset chose the scoring ('' when options were given)."""

    @property
    def options(self) -> ScoreOptions:
        """The fixed weights every channel sum of this query uses."""
        return self.choice.options

    @property
    def notes(self) -> list[str]:
        return self.applied.notes


def resolve(options: ScoreOptions | None, channels: Iterable[str], query_losses: torch.Tensor | None,
            reference_loss: Callable[[], float], build_preset: str | None = None, change: str = "pass options",
            overrides: Mapping[str, Any] | None = None, behaviour: BehaviourTest | None = None) -> Weighting:
    """THE resolution of a query's weights, on every path (library, CLI, pages): `options` (None: the scoring of
    `build_preset`, the preset the index was built for, with a line saying so (`change`: how to choose another); else
    the 'default' preset's, the per-query rule, as on the CLI and the pages), with the non-None `overrides` (flags,
    sliders: `ScoreOptions.with_overrides`), applied to the `channels` present (`ScoreOptions.for_channels`: a missing
    channel's weight is dropped with a note), then, with weighting='auto', the per-query rule (`choose`) against
    `reference_loss()` (the pool's median loss, asked for only then) and `behaviour(gradient view)` (the behaviour
    test, run only then and only where the HS channel is there to lean away from), applied to the channels again.

    Before any query (`query_losses` None: the CLI's options) the choice is unknown; `applied` is the scoring asked
    for."""
    channels = tuple(channels)
    said = ""
    if options is None:
        if build_preset in PRESET_SCORING:
            said = index_preset_line(build_preset, change)
            options = preset_scoring(build_preset)
        else:
            options = preset_scoring("default")
    if overrides:
        options = options.with_overrides(**overrides)
    applied = options.for_channels(channels)
    q = query_loss(query_losses)
    p = reference_loss() if applied.options.weighting == "auto" else float("nan")
    auto_with_hs = applied.options.weighting == "auto" and "hs" in channels
    found = behaviour(gradient_view(applied.options)) if behaviour is not None and auto_with_hs else None
    choice = choose(applied.options, q, p, "hs" in channels, found)
    return Weighting(applied, dataclasses.replace(choice, options=choice.options.for_channels(channels).options), said)
