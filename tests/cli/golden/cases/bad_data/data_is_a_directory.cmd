vbn check examples/paper/multimodal.vbn --data examples
