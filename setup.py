"""setuptools build of the lazycube Python package: build_ext configures and builds the CMake
target `_core` (the pybind11 module) and copies it into the package. Metadata is in
pyproject.toml; the version comes from CMakeLists.txt.

Environment:
  LAZYCUBE_CMAKE_BUILD_DIR  an already configured CMake build folder to build `_core` in
                            (no configure step; e.g. the build/ of scripts/setup.sh). Default: a
                            fresh folder under setuptools' build_temp, configured for the module
                            only (no tests, CLI or benchmarks).
  LAZYCUBE_CMAKE_ARGS       extra CMake configure arguments (split on spaces)
  LAZYCUBE_BUILD_JOBS       build parallelism (default: the CPU count)
"""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*lazycube\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("no project(lazycube VERSION x.y.z) in CMakeLists.txt")
    return m.group(1)


class CMakeBuildExt(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("LAZYCUBE_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
            if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                raise RuntimeError("LAZYCUBE_CMAKE_BUILD_DIR=%s is not a configured CMake build "
                                   "folder" % build_dir)
        else:
            build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
            args = [
                "cmake", "-S", ROOT, "-B", build_dir,
                "-DCMAKE_BUILD_TYPE=Release",
                "-DPython_EXECUTABLE=" + sys.executable,
                "-DLAZYCUBE_BUILD_PYTHON=ON",
                "-DLAZYCUBE_BUILD_TESTS=OFF",
                "-DLAZYCUBE_BUILD_CLI=OFF",
                "-DLAZYCUBE_BUILD_BENCH=OFF",
            ]
            if shutil.which("ninja") and not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                args += ["-G", "Ninja"]
            args += os.environ.get("LAZYCUBE_CMAKE_ARGS", "").split()
            subprocess.check_call(args)
        jobs = os.environ.get("LAZYCUBE_BUILD_JOBS") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_core", "-j", jobs])
        built = sorted(glob.glob(os.path.join(build_dir, "python", "lazycube", "_core*.so")),
                       key=os.path.getmtime)
        if not built:
            raise RuntimeError("CMake built no python/lazycube/_core*.so in %s (is pybind11 "
                               "installed? Debian: pybind11-dev)" % build_dir)
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[-1], dest)


setup(
    version=cmake_version(),
    ext_modules=[Extension("lazycube._core", sources=[])],
    cmdclass={"build_ext": CMakeBuildExt},
    zip_safe=False,
)
