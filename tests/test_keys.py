"""Key codecs on the host: bool's codec (its byte, uint8's order), which names the command line
takes, and what a refusal of bfloat16 says when the ml_dtypes package is missing (simulated)."""

import numpy as np
import pytest

import clradix
import clradix.core.keys
from clradix.__main__ import main
from clradix.core.keys import KEY_DTYPE_NAMES, KEY_DTYPES, key_codec, parse_dtype


def test_bool_codec_is_its_byte(rng):
    codec = key_codec(bool)
    assert key_codec(np.bool_) is codec and key_codec("?") is codec
    assert (codec.dtype, codec.kind, codec.bits, codec.cl_type) == (np.dtype(bool), "uint", 8,
                                                                    "uchar")
    x = rng.random(1000) < 0.4
    okey = codec.order_key(x)
    np.testing.assert_array_equal(okey, x.astype(np.uint8))
    np.testing.assert_array_equal(np.argsort(okey, kind="stable"), np.argsort(x, kind="stable"))
    # numpy's numeric types only: the suites iterating KEY_DTYPES do not build bool
    assert np.dtype(bool) not in KEY_DTYPES and clradix.KEY_DTYPES == KEY_DTYPES


def test_command_line_names_are_every_key_dtype():
    """The command lines take every key dtype (KEY_DTYPE_NAMES: bool too, whose random keys
    clradix.bench makes of False and True), by name or short name; a refusal lists them all."""
    assert parse_dtype("u8") == np.uint8 and parse_dtype(" float64 ") == np.float64
    for name in ("bool", "?", "b1"):
        assert parse_dtype(name) == np.bool_
    for name in KEY_DTYPE_NAMES:
        if name != "bfloat16":   # (with ml_dtypes only: test_bfloat16_with_ml_dtypes)
            assert str(parse_dtype(name)) == name
    with pytest.raises(TypeError, match="unsupported key dtype 'c8'") as info:
        parse_dtype("c8")
    assert all(name in str(info.value) for name in KEY_DTYPE_NAMES), str(info.value)


def test_bfloat16_refusal_names_the_extra(monkeypatch, capsys):
    """Without ml_dtypes, every way of asking for bfloat16 says what to install."""
    try:
        import ml_dtypes
        installed = [ml_dtypes.bfloat16, np.dtype(ml_dtypes.bfloat16)]
    except ImportError:
        installed = []
    monkeypatch.setattr(clradix.core.keys, "_ml_dtypes", None)
    for name in ["bfloat16", "bf16", " bfloat16 "] + installed:
        with pytest.raises(TypeError) as info:
            key_codec(name)
        assert "clradix[bfloat16]" in str(info.value), str(info.value)
        assert "pip install ml_dtypes" in str(info.value), str(info.value)
    for name in ("bfloat16", "bf16"):
        with pytest.raises(TypeError, match=r"pip install 'clradix\[bfloat16\]' \(or pip install "
                                            r"ml_dtypes\)"):
            parse_dtype(name)
    with pytest.raises(SystemExit):
        main(["demo", "--dtype", "bf16"])
    err = capsys.readouterr().err
    assert "argument --dtype: unsupported key dtype 'bfloat16'" in err and \
        "clradix[bfloat16]" in err, err
    # another unsupported dtype: the list of key types, and the extra that adds bfloat16
    with pytest.raises(TypeError, match=r"uint8, .*, float64 or bool \(bfloat16 too with the "
                                        r"ml_dtypes package: pip install 'clradix\[bfloat16\]'\)"):
        key_codec(np.complex64)


def test_bfloat16_with_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    codec = key_codec(ml_dtypes.bfloat16)
    assert (codec.kind, codec.bits, codec.inf_bits) == ("float", 16, 0x7F80)
    assert key_codec("bfloat16") is codec and key_codec("bf16") is codec
    assert parse_dtype("bf16") == np.dtype(ml_dtypes.bfloat16)
