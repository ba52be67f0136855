// Precompiled header for the engine: LibTorch is large, compile it once.
// Never include fmt or spdlog in the engine: torch's include path carries its own fmt (12).
#pragma once
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/init.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/sgd.h>
#include <torch/optim/adamw.h>
