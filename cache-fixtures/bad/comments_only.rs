// This file only has comments.
/* and a block comment */
