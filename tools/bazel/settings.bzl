"""A boolean command-line setting (`--//pkg:name=true|false`) without bazel_skylib, which Bazel 4 offline lacks here."""

BoolSettingInfo = provider(fields = ["value"])

def _bool_setting_impl(ctx):
    return BoolSettingInfo(value = ctx.build_setting_value)

bool_setting = rule(
    implementation = _bool_setting_impl,
    build_setting = config.bool(flag = True),
)
