// version: baresgd's version string (recorded in the --metrics header).
#pragma once

constexpr const char kBaresgdVersion[] = "0.3.0";
