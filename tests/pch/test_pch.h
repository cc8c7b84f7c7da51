/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The precompiled header of the test binaries: what nearly
 * every test file includes and costs most to parse, GoogleTest above all
 * (about 0.6 s of CPU a file on a 2-vCPU build box). Only headers every
 * test target can see: no pokelab header (each target has its own rooms'
 * include directories). tests/meson.build precompiles it once and adds it to
 * each test compile with -include.
 */
#ifndef POKELAB_TEST_PCH_H
#define POKELAB_TEST_PCH_H

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#endif /* POKELAB_TEST_PCH_H */
