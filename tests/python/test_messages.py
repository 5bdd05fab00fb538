# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Messages and exception types a Python user sees (issue 14): no SWIG
internals, the caller's own values named, the usual builtin bases."""

import tempfile

import pytest

import rshare


def test_bad_argument_types_name_the_parameter(dev):
    cases = [
        (lambda: rshare.open(123), "'name'"),
        (lambda: rshare.Device.from_fd("3"), "'fd'"),
        (lambda: dev.alloc_var("tlp"), "'flags'"),
        (lambda: dev.import_pd(123), "'blob'"),
        (lambda: dev.import_var(None), "'blob'"),
        (lambda: rshare.send("sock", dev), "'sock'"),
        (lambda: rshare.recv(None), "'sock'"),
    ]
    for call, parameter in cases:
        with pytest.raises(TypeError) as info:
            call()
        message = str(info.value)
        assert parameter in message, message
        assert "in method" not in message and "argument 1 of type" not in message, message


def test_from_fd_reports_the_callers_fd():
    with tempfile.TemporaryFile() as f:
        with pytest.raises(rshare.NoDevice) as info:
            rshare.Device.from_fd(f.fileno())
        assert f"fd {f.fileno()} " in str(info.value), str(info.value)
        assert str(info.value).startswith("rshare_device_import")


def test_invalid_argument_is_a_value_error(dev):
    assert issubclass(rshare.InvalidArgument, ValueError)
    with pytest.raises(ValueError) as info:
        rshare.from_text("rshare:!!")
    assert isinstance(info.value, rshare.InvalidArgument)
    assert info.value.code == rshare._rshare.RSHARE_E_INVAL
    with pytest.raises(ValueError):
        dev.alloc_var(1 << 40)


def test_error_code_and_name_are_never_none():
    for cls in [rshare.Error, rshare.NotFound, rshare.InvalidArgument]:
        assert isinstance(cls.code, int) and isinstance(cls.name, str)
    exc = rshare.Error("message")
    assert isinstance(exc.code, int) and isinstance(exc.name, str) and exc.errno == 0


def test_star_import_does_not_shadow_builtins():
    namespace = {}
    exec("from rshare import *", namespace)
    assert "open" not in namespace
    assert namespace["Device"] is rshare.Device and namespace["recv"] is rshare.recv
    import builtins
    assert not set(rshare.__all__) & set(dir(builtins))
    for name in rshare.__all__:
        assert hasattr(rshare, name), name
