"""Research studies, run from the repository root as `python -m studies.NAME`: how the defaults were chosen and how
well they do (docs/EVALUATION.md, docs/SCALE.md, docs/TRIGGER.md). Most read the real dev pools beside the repository
(../shared/data/dev) through the one task loader, `studies.tasks`; none reads anything at import."""
