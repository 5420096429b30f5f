"""External repositories for Ember, all local (see ../shared/BAZEL_OFFLINE.md for why each exists)."""

load("//third_party/python:python_configure.bzl", "python_configure")

def ember_repositories():
    # Bazel's own cc rules load @rules_cc; Debian's rules_cc is too new for Bazel 4, so we forward to the
    # native rules from a local copy.
    native.local_repository(name = "rules_cc", path = "third_party/rules_cc")

    # `bazel test` asks for this repository even without coverage; empty filegroups satisfy it.
    native.local_repository(name = "remote_coverage_tools", path = "third_party/remote_coverage_tools")

    native.local_repository(name = "platforms", path = "/usr/share/bazel/tools/platforms")
    native.local_repository(name = "bazel_skylib", path = "/usr/share/bazel/tools/skylib")
    native.local_repository(name = "rules_java", path = "/usr/share/bazel/rules/java")
    native.local_repository(name = "rules_proto", path = "/usr/share/bazel/rules/proto")

    # Debian `googletest`: sources only, built here.
    native.new_local_repository(
        name = "gtest",
        path = "/usr/src/googletest",
        build_file = "//third_party/gtest:BUILD.gtest",
    )

    # Debian `libflatbuffers-dev` (headers) and `flatbuffers-compiler` (flatc 2.0.8).
    native.new_local_repository(
        name = "flatbuffers",
        path = "/usr/include",
        build_file = "//third_party/flatbuffers:BUILD.headers",
    )
    native.new_local_repository(
        name = "flatc",
        path = "/usr/bin",
        build_file = "//third_party/flatbuffers:BUILD.flatc",
    )

    # Debian's copyright files of the third-party code SDK bundles ship (tools/sdk: flatbuffers' headers).
    native.new_local_repository(
        name = "debian_copyright",
        path = "/usr/share/doc",
        build_file = "//third_party/debian_copyright:BUILD.copyright",
    )

    # Debian `libxnnpack-dev` and `libpthreadpool-dev`: the XnnpackBackend delegate (--config=xnnpack only).
    native.new_local_repository(
        name = "system_xnnpack",
        path = "/usr/include",
        build_file = "//third_party/xnnpack:BUILD.system",
    )

    # Debian `libcpp-httplib-dev`: the HTTP server of examples/llm/server (llm_server).
    native.new_local_repository(
        name = "system_httplib",
        path = "/usr/include",
        build_file = "//third_party/httplib:BUILD.system",
    )

    # Python headers and pybind11 from the project's virtual environment (.venv, made by ./setup.sh).
    python_configure(name = "local_python")
