# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Print where `cmake --install` puts the Python package, relative to the
install prefix given as argv[1] (run at install time, so a --prefix given
to `cmake --install` is honoured).

  /usr        on Debian: lib/python3/dist-packages (the "deb_system" scheme,
              where Debian's /usr/bin/python3 looks; not lib/python3.X/...)
  /usr/local  on Debian: lib/python3.X/dist-packages (also searched by it)
  otherwise   lib/python3.X/site-packages (the standard layout; add it to
              PYTHONPATH, or use a venv of that prefix)
"""

import sys
import sysconfig

prefix = sys.argv[1].rstrip("/") or "/"
debian = "deb_system" in sysconfig.get_scheme_names()
paths = {"platbase": prefix, "base": prefix}
if debian and prefix == "/usr":
    path = sysconfig.get_path("platlib", "deb_system", paths)
else:
    path = sysconfig.get_path("platlib", "posix_prefix", paths)
    if debian and prefix == "/usr/local":
        path = path.replace("site-packages", "dist-packages")
print(path[len(prefix):].lstrip("/"), end="")
