"""Template rendering and program building: strict names, errors that say where and why."""

import numpy as np
import pytest

from clradix.core.keys import key_codec
from clradix.core.render import KernelBuildError, ProgramCache, TemplateRenderError, render

PARAMS = dict(key_codec(np.uint32).template_args(), radix_bits=8, wg=64, ipt=4, value_t=None,
              index_t="uint", fused_scan=False)


def test_missing_parameter_is_an_error_naming_it():
    params = dict(PARAMS)
    del params["wg"]
    with pytest.raises(TemplateRenderError, match="reduce_then_scan.cl.mako") as info:
        render("reduce_then_scan.cl.mako", **params)
    assert "wg" in str(info.value)


def test_render_is_deterministic_and_parameterised():
    a = render("reduce_then_scan.cl.mako", **PARAMS)
    assert a == render("reduce_then_scan.cl.mako", **PARAMS)
    assert "#define RADIX 256" in a and "#define WG 64" in a
    b = render("reduce_then_scan.cl.mako", **dict(PARAMS, radix_bits=4))
    assert "#define RADIX 16" in b


def test_build_error_names_device_parameters_and_log(ctx):
    cache = ProgramCache(ctx)
    with pytest.raises(KernelBuildError) as info:
        cache.get("reduce_then_scan.cl.mako", dict(PARAMS, index_t="no_such_type"))
    msg = str(info.value)
    assert ctx.devices[0].name.strip() in msg
    assert "index_t='no_such_type'" in msg
    assert "no_such_type" in msg.split("index_t='no_such_type'", 1)[1]  # the build log


def test_programs_are_memoised(ctx):
    cache = ProgramCache(ctx)
    assert cache.get("reduce_then_scan.cl.mako", PARAMS) is cache.get("reduce_then_scan.cl.mako", PARAMS)
