vbn fit examples/paper/multimodal.vbn
