"""Where the τ-bench suites' data comes from (`tasks.datasets`; ``harness data pull taubench``).

The databases and ``wiki.md`` are files of ``sierra-research/tau-bench`` at commit ``59a200c``;
the task lists and ``rules.json`` were converted from upstream's Python files to JSON (see
``shared/data/taubench/README.md``), so they are published nowhere as such and, like the rest,
come from a mirror of ``shared/data`` (``HARNESS_DATA_BASE_URL``).
"""

from __future__ import annotations

from tasks.datasets import DataFile, DataSet

__all__ = ["DATASET"]

DATASET = DataSet(
    name="taubench", env="TAUBENCH_DATA",
    source="τ-bench retail and airline data (sierra-research/tau-bench 59a200c, MIT); task "
           "lists converted to JSON",
    files=(
        DataFile("LICENSE", size=1063,
                 sha256="243d23d45b80122b5ac575586ccef352fdc9c45e6d7d2605449aca8a17478b42"),
        DataFile("retail/orders.json", size=1810945,
                 sha256="2598a12586d28f2d6bd16bc86f4c800029b6af18e0abb5c475ef5c869c11ced1"),
        DataFile("retail/products.json", size=172258,
                 sha256="a9eabcc1a9742c5f5288c2779acce52b9308423383ed24706bbaf0889f762a0f"),
        DataFile("retail/rules.json", size=920,
                 sha256="9fdb9bd32797e10585ee77096e9ba184403b0ab7d32108e31210e2cddbcaf01a"),
        DataFile("retail/tasks_dev.json", size=16696,
                 sha256="586523860d58aea22c51f9094d4b80ae80fbac186243a678c69fac3aa84974af"),
        DataFile("retail/tasks_test.json", size=147555,
                 sha256="120112510864e5c7d5cf6563db2d33ddd6c0190eb18f70d264791298d886ee58"),
        DataFile("retail/tasks_train.json", size=395934,
                 sha256="abdcac69b80a899468b5643cc07b3e649c67a01b3df0e1378d4aa290126bb516"),
        DataFile("retail/users.json", size=322932,
                 sha256="6f4fd104cc5e80b92166c4035315c31532c6cea52a90dcdf18425ee7f87c2b82"),
        DataFile("retail/wiki.md", size=5718,
                 sha256="d539fd2a46a8b8dd2e934ff9ed92f43e9f6b56bc7a718db8d2803ba8ad8f6bf7"),
        DataFile("airline/flights.json", size=2114218,
                 sha256="444d7565c68434a3e3fb72efd717f9f9cd5c56dce227f6f56e078f1cb0ed233a"),
        DataFile("airline/reservations.json", size=2325594,
                 sha256="1cf0bbc58ad984be9de7c24dba6dd27393f94cdbd482d8524f6a54db1f561a8c"),
        DataFile("airline/rules.json", size=3,
                 sha256="37517e5f3dc66819f61f5a7bb8ace1921282415f10551d2defa5c3eb0985b570"),
        DataFile("airline/tasks_test.json", size=59195,
                 sha256="fd7f8f3c8d06dd69ca10b6899e79d24b17c9ef9fb8da670a51bdc75227b0079c"),
        DataFile("airline/users.json", size=595947,
                 sha256="bd264e2a31e0fa35cdfef8987e70a0dd3776828b582fe90e7a44823a12eb4cea"),
        DataFile("airline/wiki.md", size=6155,
                 sha256="56c335801c16e26b54f600f9db99eb04d31db477e86eb160341d5c66b796c5c8"),
    ))
