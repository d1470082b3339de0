"""The step-time calculator (Playground): any step on any GPU and model, priced part by part."""
