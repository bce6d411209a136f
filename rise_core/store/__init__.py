"""RISE indexes in DuckDB: the file format (`schema`), the index (`index`) and its resumable build (`build`)."""

from .build import build_index
from .index import RiseIndex, check_new_location, list_indexes, sample_from_row
from .schema import BuildReport, IndexManifest

__all__ = ["BuildReport", "IndexManifest", "RiseIndex", "build_index", "check_new_location", "list_indexes", "sample_from_row"]
