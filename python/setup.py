# The recorder's native statistics (ranksight/_gradstats.c: plain C, loaded with ctypes, no Python headers).
# Optional: without a C compiler the package installs all the same and its statistics take torch passes
# (ranksight.gradstats.kernel_info() says which).
from setuptools import Extension, setup

setup(ext_modules=[Extension("ranksight._gradstats", ["ranksight/_gradstats.c"], optional=True,
                             extra_compile_args=["-O3", "-std=c11"])])
