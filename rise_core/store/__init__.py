"""RISE indexes in DuckDB: the file format (`schema`), rows and features as tables (`rows`), index files on disk
(`files`), the index (`index`) and its resumable build (`build`)."""

from .build import build_index
from .files import check_new_location
from .index import RiseIndex, list_indexes
from .rows import sample_from_row
from .schema import BuildReport, IndexManifest

__all__ = ["BuildReport", "IndexManifest", "RiseIndex", "build_index", "check_new_location", "list_indexes",
           "sample_from_row"]
