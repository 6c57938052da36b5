"""Builds the extension vbn._vbn with CMake (python/CMakeLists.txt, turned on by
VBN_BUILD_PYTHON) and copies it into the package. VBN_CMAKE_BUILD_DIR names an existing
build directory of this repository to build it in, so that only the module compiles there;
without it a Release build of the library is made under setuptools' build_temp."""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def project_version():
    """The version of the C++ project (its CMakeLists.txt), which the module reports too."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.search(r"project\(vbn VERSION ([\d.]+)", f.read())[1]


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("VBN_CMAKE_BUILD_DIR") or os.path.join(os.path.abspath(self.build_temp), "cmake")
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DVBN_BUILD_PYTHON=ON", f"-DPYTHON_EXECUTABLE={sys.executable}"]
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            configure += ["-DCMAKE_BUILD_TYPE=Release", "-DVBN_BUILD_TESTS=OFF"]
            if shutil.which("ninja"):
                configure += ["-G", "Ninja"]
        subprocess.check_call(configure)
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_vbn", "-j", jobs])
        built = glob.glob(os.path.join(build_dir, "python", "lib", "_vbn*.so"))
        if len(built) != 1:
            sys.exit(f"setup.py: expected one built module in {build_dir}/python/lib, found {built}")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[0], dest)


setup(version=project_version(), ext_modules=[Extension("vbn._vbn", sources=[])], cmdclass={"build_ext": CMakeBuild})
