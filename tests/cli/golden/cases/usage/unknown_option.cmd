vbn check examples/paper/multimodal.vbn --frobnicate
