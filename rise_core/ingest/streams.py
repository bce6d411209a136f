"""Pools read chunk by chunk, never whole (`PoolStream`): a Hugging Face `datasets` dataset or save_to_disk folder,
Arrow or (sharded) Parquet files, any source of batches that can be read again; each chunk read by `read_pool`."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputDataError
from .fields import FieldMap
from .pool import PoolData, check_unique, no_usable_rows, read_pool
from .tables import COMPRESSIONS, check_columns, csv_rows, json_row, open_data, read_table, records_frame
from .values import stable_id

STREAM_CHUNK_ROWS = 1024  # rows per chunk when the reader does not say
_DATASET_FOLDER_FILES = ("state.json", "dataset_info.json")  # what `Dataset.save_to_disk` writes beside its Arrow files
# the shards a folder may hold, one kind a folder (read in file-name order; the text kinds through `datasets`)
_SHARD_KINDS = {"Parquet": (".parquet", ".pq"), "Arrow": (".arrow",), "JSON Lines": (".jsonl", ".json"),
                "CSV": (".csv",)}


@dataclass
class PoolStream:
    """A pool read chunk by chunk, so a large one never sits in memory whole.

    Each `chunks()` call reads the source again from its start (a build reads it once more to fit the hidden-state
    mean of a new index). Every chunk is made by `read_pool` with one field map, resolved once against `columns`;
    its rows are numbered in the whole stream, and ids are checked unique across chunks as `read_pool` checks them
    within a file (a repeated id is an error; a repeated text without an id is skipped as a duplicate)."""

    source: str  # names the pool in messages
    columns: list[str]
    fields: FieldMap
    n_rows: int | None  # records in the source when it knows without reading them all, else None
    open_batches: Callable[[int], Iterable[Any]] = field(repr=False)
    """rows -> a fresh iterable of batches of about that many records: Arrow tables or record batches, DataFrames,
    dicts of columns or lists of records"""

    @classmethod
    def from_batches(cls, open_batches: Callable[[int], Iterable[Any]], source: str = "<batches>",
                     fields: FieldMap | dict[str, str | None] | None = None, n_rows: int | None = None,
                     columns: Sequence[str] | None = None) -> PoolStream:
        """A stream over any re-readable source of batches (see `open_batches`); `columns` default to the first
        batch's. `fields` as in `read_pool`: a FieldMap, some field names, or None to guess them from the columns."""
        if columns is None:
            first = next(iter(open_batches(1)), None)
            columns = [] if first is None else list(_batch_frame(first, [], source).columns)
        columns = [str(c) for c in columns]
        check_columns(columns, source)
        fields = FieldMap.for_columns(columns, fields, source)
        return cls(source=source, columns=columns, fields=fields, n_rows=n_rows, open_batches=open_batches)

    @classmethod
    def from_records(cls, open_records: Callable[[], Iterable[dict[str, Any]]], source: str = "<records>",
                     fields: FieldMap | dict[str, str | None] | None = None, n_rows: int | None = None,
                     columns: Sequence[str] | None = None) -> PoolStream:
        """A stream over records (dicts) from `open_records()`, called again for every read, e.g. a generator
        function; only one chunk of them is held at a time."""

        def open_batches(rows: int) -> Iterator[list[dict[str, Any]]]:
            records = iter(open_records())
            while batch := list(itertools.islice(records, rows)):
                yield batch

        return cls.from_batches(open_batches, source, fields, n_rows, columns)

    def chunks(self, rows: int = STREAM_CHUNK_ROWS) -> Iterator[PoolData]:
        """The pool from its start, as PoolData chunks of at most `rows` records (rows numbered in the stream)."""
        if rows < 1:
            raise InputDataError(f"rows per chunk must be at least 1, got {rows}")
        explicit: dict[str, int] = {}
        derived: dict[str, int] = {}
        first = 1
        for batch in self.open_batches(rows):
            frame = _batch_frame(batch, self.columns, self.source)
            for start in range(0, len(frame), rows):
                part = frame.iloc[start:start + rows].reset_index(drop=True)
                data = read_pool(part, self.fields, name=self.source, first_row=first)
                first += len(part)
                yield self._unique_across_chunks(data, explicit, derived)

    def _unique_across_chunks(self, data: PoolData, explicit: dict[str, int], derived: dict[str, int]) -> PoolData:
        """`data` less the rows whose derived id an earlier chunk has (skipped as duplicates); an id given twice is an
        error naming both rows, as in `read_pool`. `explicit` / `derived`: id -> row, of the chunks read so far."""
        samples, rows, skipped = [], [], list(data.skipped)
        for sample, row in zip(data.samples, data.rows, strict=True):
            sid = str(sample.id)
            if sid == stable_id(sample):  # given without an id: its content id
                if sid in derived:
                    skipped.append((row, f"duplicate of row {derived[sid]} (same text, no id)"))
                    continue
                if sid in explicit:
                    check_unique({sid: [explicit[sid]]}, {sid: row}, self.source)
                derived[sid] = row
            else:
                if sid in explicit:
                    check_unique({sid: [explicit[sid], row]}, {}, self.source)
                if sid in derived:
                    check_unique({sid: [row]}, {sid: derived[sid]}, self.source)
                explicit[sid] = row
            samples.append(sample)
            rows.append(row)
        return PoolData(samples=samples, skipped=sorted(skipped), rows=rows, n_rows=data.n_rows, source=self.source,
                        fields=self.fields)

    def count(self, rows: int = STREAM_CHUNK_ROWS) -> tuple[int, int]:
        """(usable samples, records) of the whole source, reading it once (ids checked unique); InputDataError, with
        the first reasons, when no row is usable."""
        n_samples = n_rows = n_skipped = 0
        first: list[tuple[int, str]] = []
        for chunk in self.chunks(rows):
            n_samples, n_rows, n_skipped = n_samples + len(chunk), n_rows + chunk.n_rows, n_skipped + len(chunk.skipped)
            first.extend(chunk.skipped[:3 - len(first)])
        if n_samples == 0:
            raise no_usable_rows(self.source, n_skipped, first)
        return n_samples, n_rows

    def read_all(self) -> PoolData:
        """The whole pool in memory (for the sharded build, or a small pool)."""
        samples, rows, skipped, n_rows = [], [], [], 0
        for chunk in self.chunks():
            samples += chunk.samples
            rows += chunk.rows
            skipped += chunk.skipped
            n_rows += chunk.n_rows
        return PoolData(samples=samples, skipped=skipped, rows=rows, n_rows=n_rows, source=self.source,
                        fields=self.fields)


def _batch_frame(batch: Any, columns: Sequence[str], source: str) -> pd.DataFrame:
    """One batch as an object-dtype DataFrame with every column of `columns` (None where the batch lacks one); cells
    hold Python values, as `read_table` gives them."""
    import pyarrow as pa

    if isinstance(batch, (pa.Table, pa.RecordBatch)):
        check_columns(batch.schema.names, source)
        data = {}
        for name, col in zip(batch.schema.names, batch.columns, strict=True):
            try:
                data[str(name)] = pd.Series(col.to_pylist(), dtype=object)
            except (pa.ArrowException, UnicodeDecodeError) as exc:
                raise InputDataError(f"{source}: column {name!r} cannot be decoded: {exc}") from exc
        frame = pd.DataFrame(data, dtype=object)
    elif isinstance(batch, pd.DataFrame):
        check_columns(batch.columns, source)
        frame = batch.astype(object)
        frame.columns = [str(c) for c in frame.columns]
    elif isinstance(batch, dict):
        lengths = {len(v) for v in batch.values()}
        if len(lengths) > 1:
            raise InputDataError(f"{source}: a batch's columns have different lengths {sorted(lengths)}")
        frame = pd.DataFrame({str(k): pd.Series(list(v), dtype=object) for k, v in batch.items()}, dtype=object)
    elif isinstance(batch, list) and all(isinstance(r, dict) for r in batch):
        frame = records_frame(batch)
    else:
        raise InputDataError(f"{source}: a batch must be an Arrow table, a DataFrame, a dict of columns or a list of "
                             f"records (dicts), got {type(batch).__name__}")
    for name in columns:
        if name not in frame.columns:
            frame[name] = pd.Series([None] * len(frame), dtype=object)
    return frame


def stream_pool(source: Any, fields: FieldMap | dict[str, str | None] | None = None) -> PoolStream | None:
    """A PoolStream over a pool held where people keep large ones, or None for anything else (a file `read_pool`
    reads whole, a DataFrame, samples):

    - a folder written by `datasets`' `Dataset.save_to_disk` (memory-mapped by `datasets.load_from_disk`);
    - a folder of Arrow files (IPC file or stream format) or of Parquet files (sharded; subfolders included, names
      starting with '.' or '_' left out), read in file-name order; an `.arrow` file;
    - a folder of JSON Lines (or JSON) or of CSV files, compressed or not, through `datasets.load_dataset(folder)`
      (`dataset_pool`): its json or csv builder reads them once into its cache, which is then memory-mapped;
    - a `datasets.Dataset` or `IterableDataset` (a DatasetDict: pick a split first);
    - a PoolStream (returned as it is)."""
    if isinstance(source, PoolStream):
        return source
    if _is_datasets_object(source):
        return dataset_stream(source, fields)
    if not isinstance(source, (str, Path)):
        return None
    path = Path(source).expanduser()
    if path.is_dir():
        return _folder_stream(path, fields)
    if path.suffix.lower() == ".arrow":
        if not path.is_file():
            raise InputDataError(f"no such file: {str(path)!r}")
        return _arrow_stream([path], str(path), fields)
    return None


def _is_datasets_object(obj: Any) -> bool:
    import sys

    ds = sys.modules.get("datasets")  # an object of `datasets` exists only once the module is imported
    return ds is not None and isinstance(obj, (ds.Dataset, ds.IterableDataset, ds.DatasetDict, ds.IterableDatasetDict))


def _folder_stream(path: Path, fields: FieldMap | dict[str, str | None] | None) -> PoolStream:
    if (path / "dataset_dict.json").is_file():
        splits = json.loads((path / "dataset_dict.json").read_text()).get("splits", [])
        raise InputDataError(f"{path} holds a `datasets` DatasetDict with the splits {splits}: give one split's folder"
                             + (f", e.g. {path / splits[0]}" if splits else ""))
    if all((path / name).is_file() for name in _DATASET_FOLDER_FILES):
        import datasets

        try:
            ds = datasets.load_from_disk(str(path))
        except (OSError, ValueError, KeyError, datasets.exceptions.DatasetsError) as exc:
            raise InputDataError(f"{path}: not a readable `datasets` folder: {exc}") from exc
        return dataset_stream(ds, fields, str(path))
    files = sorted(f for f in path.rglob("*") if f.is_file() and not any(
        part.startswith((".", "_")) for part in f.relative_to(path).parts))
    kinds = {kind: [f for f in files if _shard_suffix(f, kind) in suffixes] for kind, suffixes in _SHARD_KINDS.items()}
    held = [kind for kind, found in kinds.items() if found]
    if kinds["Parquet"] or kinds["Arrow"]:  # beside them, JSON or CSV files are metadata (a hub snapshot's infos)
        held = [kind for kind in held if kind in ("Parquet", "Arrow")]
    if len(held) > 1:
        raise InputDataError(f"{path} holds both {held[0]} and {held[1]} files; give a folder of one kind")
    if kinds["Parquet"]:
        return _parquet_stream(kinds["Parquet"], str(path), fields)
    if kinds["Arrow"]:
        return _arrow_stream(kinds["Arrow"], str(path), fields)
    if held:  # text shards: `datasets` reads them (its json or csv builder) into its cache, memory-mapped
        for file in kinds["CSV"]:
            _check_csv_shard(file)
        try:
            return dataset_pool(str(path), fields)
        except InputDataError:  # `datasets` names neither the file nor the line: find them
            for file in kinds["JSON Lines"]:
                _check_json_shard(file)
            raise
    raise InputDataError(f"{path} is a folder without .parquet, .arrow, .jsonl, .json or .csv files (nor a `datasets` "
                         "save_to_disk folder); give a pool file (.jsonl, .json, .csv, .parquet) or such a folder")


def _check_csv_shard(file: Path) -> None:
    """Refuse a CSV shard with a row of more cells than its header (`csv_rows`), before `datasets` reads it: its csv
    builder (pandas) would shift every column of such a file, even for a trailing comma, taking the first column as
    the index. Read as a stream: it never sits in memory."""
    with open_data(file, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
        for _ in csv_rows(fh, str(file), strict=False, empty_extra=False):
            pass


def _check_json_shard(file: Path) -> None:
    """InputDataError naming the file, and the line, when a JSON shard cannot be read: damaged, not UTF-8, a line that
    is not a JSON object, or (the first line no JSON by itself) one document that is neither an object nor an array
    of them. Read line by line, as JSON Lines are; a document is read whole, as `datasets` reads it."""
    name, first = str(file), True
    with open_data(file) as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputDataError(f"{name}: line {lineno} is not valid UTF-8 (byte 0x{raw[exc.start]:02x}); "
                                     "re-encode the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                json_row(line, name, lineno)
            except InputDataError:
                if not first:
                    raise
                read_table(file, "json")  # one document over lines (or an array): its error, if any
                return
            first = False


def _shard_suffix(file: Path, kind: str) -> str:
    """The extension that names a shard's kind: a text shard's before its compression (`part-0.jsonl.gz`, which
    `datasets` decompresses), a binary shard's own."""
    if kind in ("JSON Lines", "CSV") and file.suffix.lower() in COMPRESSIONS:
        return file.with_suffix("").suffix.lower()
    return file.suffix.lower()


def _union_columns(schemas: Iterable[tuple[Path, Sequence[str]]]) -> list[str]:
    columns: dict[str, None] = {}
    for file, names in schemas:
        check_columns(names, str(file))
        columns.update(dict.fromkeys(map(str, names)))
    return list(columns)


def _parquet_stream(files: list[Path], source: str, fields: FieldMap | dict[str, str | None] | None) -> PoolStream:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas, n_rows = [], 0
    for file in files:
        try:
            meta = pq.read_metadata(file)
        except (pa.ArrowException, OSError) as exc:
            raise InputDataError(f"{file}: not a readable Parquet file: {exc}") from exc
        schemas.append((file, meta.schema.to_arrow_schema().names))
        n_rows += meta.num_rows

    def open_batches(rows: int) -> Iterator[Any]:
        for file in files:
            try:
                reader = pq.ParquetFile(file)
            except (pa.ArrowException, OSError) as exc:
                raise InputDataError(f"{file}: not a readable Parquet file: {exc}") from exc
            try:
                yield from _checked(reader.iter_batches(batch_size=rows), file, "Parquet")
            finally:
                reader.close()

    return PoolStream.from_batches(open_batches, source, fields, n_rows, _union_columns(schemas))


def _checked(batches: Iterable[Any], file: Path, kind: str) -> Iterator[Any]:
    """`batches`, with a read error an InputDataError naming the file."""
    import pyarrow as pa

    try:
        yield from batches
    except (pa.ArrowException, OSError) as exc:
        raise InputDataError(f"{file}: not a readable {kind} file: {exc}") from exc


def _arrow_batches(file: Path) -> tuple[Any, Iterator[Any]]:
    """(schema, record batches) of an Arrow IPC file, in the file or the stream format (`datasets` writes the
    latter), memory-mapped: a batch is read from the disk when it is used."""
    import pyarrow as pa

    try:
        source = pa.memory_map(str(file))
        try:
            reader = pa.ipc.open_file(source)
            return reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches))
        except pa.ArrowInvalid:
            source.seek(0)
            reader = pa.ipc.open_stream(source)
            return reader.schema, iter(reader)
    except (pa.ArrowException, OSError) as exc:
        raise InputDataError(f"{file}: not a readable Arrow file: {exc}") from exc


def _arrow_stream(files: list[Path], source: str, fields: FieldMap | dict[str, str | None] | None) -> PoolStream:
    schemas, n_rows = [], 0
    for file in files:  # counting reads only the batches' headers: their buffers stay on disk, mapped
        schema, batches = _arrow_batches(file)
        schemas.append((file, schema.names))
        n_rows += sum(b.num_rows for b in _checked(batches, file, "Arrow"))

    def open_batches(rows: int) -> Iterator[Any]:
        for file in files:
            for batch in _checked(_arrow_batches(file)[1], file, "Arrow"):
                for start in range(0, batch.num_rows, rows):
                    yield batch.slice(start, rows)

    return PoolStream.from_batches(open_batches, source, fields, n_rows, _union_columns(schemas))


def dataset_stream(dataset: Any, fields: FieldMap | dict[str, str | None] | None = None,
                   source: str | None = None) -> PoolStream:
    """A PoolStream over a `datasets.Dataset` (memory-mapped; its row count known) or `IterableDataset` (streamed;
    its row count when the split's info has it), read as Arrow batches."""
    import datasets

    name = source or "<dataset>"
    if isinstance(dataset, (datasets.DatasetDict, datasets.IterableDatasetDict)):
        raise InputDataError(f"{name}: a dataset with the splits {sorted(dataset)}; pick one (dataset['train'], or "
                             "--dataset NAME:SPLIT)")
    n_rows: int | None
    if isinstance(dataset, datasets.Dataset):
        n_rows, columns = dataset.num_rows, list(dataset.column_names)
    elif isinstance(dataset, datasets.IterableDataset):
        columns = list(dataset.column_names) if dataset.column_names is not None else None
        splits = getattr(dataset.info, "splits", None)
        split = str(dataset.split) if dataset.split is not None else None
        n_rows = splits[split].num_examples if splits and split in splits else None
    else:
        raise InputDataError(f"{name}: not a `datasets` dataset ({type(dataset).__name__})")
    arrow = dataset.with_format("arrow")
    return PoolStream.from_batches(lambda rows: arrow.iter(batch_size=rows), name, fields, n_rows, columns)


def parse_dataset_spec(spec: str) -> tuple[str, str]:
    """'NAME[:SPLIT]' -> (NAME, SPLIT), the split 'train' when none is given; NAME is a hub id or a local folder or
    script `datasets.load_dataset` takes."""
    name, _, split = spec.partition(":")
    name, split = name.strip(), split.strip() or "train"
    if not name:
        raise InputDataError(f"--dataset {spec!r}: give NAME or NAME:SPLIT, e.g. imdb:train")
    return name, split


def dataset_pool(spec: str, fields: FieldMap | dict[str, str | None] | None = None, config_name: str | None = None,
                 streaming: bool = False) -> PoolStream:
    """A PoolStream over `datasets.load_dataset(NAME, config_name, split=SPLIT, streaming=streaming)` for
    spec 'NAME[:SPLIT]' (`parse_dataset_spec`). Not streaming, `datasets` prepares the split once in its cache and
    memory-maps it (the row count is known, and a second read costs no download); streaming reads it from the
    source on every read."""
    import datasets

    name, split = parse_dataset_spec(spec)
    try:
        dataset = datasets.load_dataset(name, config_name, split=split, streaming=streaming)
    except (OSError, ValueError, KeyError, datasets.exceptions.DatasetsError) as exc:
        cause = exc  # "An error occurred while generating the dataset" says what only in its cause
        while cause.__cause__ is not None:
            cause = cause.__cause__
        why = f"{exc}: {cause}" if cause is not exc and str(cause) not in str(exc) else str(exc)
        raise InputDataError(f"cannot load dataset {spec!r}: {why}") from exc
    return dataset_stream(dataset, fields, f"{name}:{split}")
