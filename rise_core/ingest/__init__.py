"""Reading a pool of samples from JSONL, JSON, CSV or Parquet, with configurable field names.

`read_table` turns a file (or uploaded bytes) into a DataFrame; `read_pool` maps its columns onto `Sample`s with a
`FieldMap` (text; prompt + completion, with an optional input column appended to the prompt as Alpaca rows have it;
or a conversation, `messages`; optional id and label), keeps every other column as metadata, gives rows
without an id a stable content id, and reports the rows it cannot use instead of dropping them silently.

Row numbers in messages and reports are 1-based positions among the file's records (JSONL: non-blank lines;
CSV: data rows after the header).

A pool too large to read whole is a `PoolStream` (`stream_pool`, `dataset_pool`): a `datasets` dataset, Arrow or
sharded Parquet files, or any re-readable batches, read chunk by chunk, each chunk by `read_pool`.

The modules: `fields` (field maps and their guessing), `tables` (files into DataFrames), `values` (cell values, ids
and content hashes), `pool` (`read_pool`, `coerce_pool`, `read_samples`), `streams` (`PoolStream` and its sources).
"""

from .fields import FIELD_NAMES, INPUT_SEPARATOR, FieldMap
from .pool import PoolData, coerce_pool, first_reasons, no_usable_rows, read_pool, read_samples
from .streams import STREAM_CHUNK_ROWS, PoolStream, dataset_pool, dataset_stream, parse_dataset_spec, stream_pool
from .tables import FORMATS, detect_format, read_table
from .values import content_hash, jsonable, stable_id

__all__ = [
    "FIELD_NAMES", "FORMATS", "INPUT_SEPARATOR", "STREAM_CHUNK_ROWS", "FieldMap", "PoolData", "PoolStream",
    "coerce_pool", "content_hash", "dataset_pool", "dataset_stream", "detect_format", "first_reasons", "jsonable",
    "no_usable_rows", "parse_dataset_spec",
    "read_pool", "read_samples", "read_table", "stable_id", "stream_pool",
]
