vbn check inputs/models/unterminated_comment.vbn
