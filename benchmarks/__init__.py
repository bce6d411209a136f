"""The product's benchmarks, run from the repository root as `python -m benchmarks.NAME`: speed, size and load,
on bundled or synthetic data, so each runs from a fresh clone. They share `benchmarks.harness`. Each module's
docstring says what it measures and the command behind the documented figures; the research studies are in
`studies/`."""
