"""Module hooks, as in PyTorch: capture intermediate features with a forward hook, rescale a
layer's input with a forward pre-hook, and inspect gradients with a full backward hook.

    python examples/feature_extraction_hooks.py
"""
import minitorch as mt
import minitorch.nn as nn


def build_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(16, 10))


def main():
    mt.manual_seed(0)
    model = build_cnn()
    images = mt.rand(4, 1, 28, 28)

    features = {}

    def save_output(name):
        def hook(module, args, output):
            features[name] = output.detach()
        return hook

    handles = [model[1].register_forward_hook(save_output("relu1")),
               model[6].register_forward_hook(save_output("embedding"))]

    def halve_input(module, args):
        return (args[0] * 0.5,)          # a pre-hook may replace the module's inputs

    handles.append(model[7].register_forward_pre_hook(halve_input))

    gradient_norms = {}

    def record_gradients(module, grad_input, grad_output):
        gradient_norms[type(module).__name__] = float(grad_output[0].norm())

    handles.append(model[3].register_full_backward_hook(record_gradients))

    logits = model(images)
    logits.sum().backward()
    for name, value in features.items():
        print(f"feature {name:9s} shape {tuple(value.shape)}  mean {value.mean().item():.4f}")
    print(f"gradient norm at the second conv's output: {gradient_norms['Conv2d']:.4f}")

    for handle in handles:
        handle.remove()
    features.clear()
    model(images)
    print(f"after removing the hooks, features captured: {len(features)}")
    return features, gradient_norms


if __name__ == "__main__":
    main()
