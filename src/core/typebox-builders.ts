// The TypeBox builders conch's own schemas use, as core/typebox.ts's `Type`: name one here to use it.
export { Array, Boolean, Integer, Literal, Null, Number, Object, Optional, Record, String, Union, Unknown } from 'typebox';
