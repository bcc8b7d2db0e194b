"""A worker process of `integrity.verify_log`: `python -m integrity.worker`.

It reads pickled messages from stdin: first `(Source, ScanPlan)`, then one
`(after, upto)` range at a time, answering each with that range's
`RangeSummary`, pickled, on stdout; `None` ends it. A worker is started as a
plain subprocess, not by multiprocessing: it imports only what checking
needs, and never the parent's `__main__`.
"""

from __future__ import annotations

import gc
import os
import pickle
import sys

from integrity.ranges import check_range
from integrity.scan import open_scanner


def main() -> None:
    # The rows and summaries a worker makes hold no reference cycles, and it ends when
    # the log is checked: the cyclic collector would only spend time (BENCHMARKS.md,
    # "Design choices, measured").
    gc.disable()
    read, write = sys.stdin.buffer, sys.stdout.buffer
    source, plan = pickle.load(read)
    scanner = open_scanner(source)
    try:
        while (job := pickle.load(read)) is not None:
            after, upto = job
            pickle.dump(check_range(scanner, after, upto, plan), write, pickle.HIGHEST_PROTOCOL)
            write.flush()
    finally:
        scanner.close()


if __name__ == "__main__":
    main()
    # Every answer is written: end without the interpreter's teardown (freeing each module
    # and object, and a collection), which took 0.1-0.4 s while the parent waited for it.
    sys.stdout.flush()
    os._exit(0)
