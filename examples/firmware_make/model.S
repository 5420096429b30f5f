/* The model, embedded: the .pte the Makefile names (EMBER_MODEL_PATH), in the board's big memory (DDR on the
 * AN547: mps3_an547.ld's .ember_model), aligned as the program's segments need. */
  .section .ember.model, "a"
  .balign 32
  .global ember_app_model
ember_app_model:
  .incbin EMBER_MODEL_PATH
  .global ember_app_model_end
ember_app_model_end:
