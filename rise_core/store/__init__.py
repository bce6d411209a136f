"""RISE indexes in DuckDB: the file format (`schema`), rows and features as tables (`rows`), index files on disk
(`files`), the index handle (`index`: `RiseIndex`, its connection from `connection` and its reads from `reader`), its
resumable build (`build`) and its sharded build on Ray (`distributed`)."""

from .build import build_index
from .distributed import DistributedBuildError, build_index_distributed
from .files import check_new_location
from .index import RiseIndex, list_indexes
from .rows import row_text, sample_from_row
from .schema import BuildReport, IndexManifest

__all__ = ["BuildReport", "DistributedBuildError", "IndexManifest", "RiseIndex", "build_index", "build_index_distributed",
           "check_new_location", "list_indexes", "row_text", "sample_from_row"]
